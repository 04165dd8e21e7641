import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// `deploy/compose.yaml` is documentation no test can run here (no image registry), so this
/// checks that it still describes what the multi-instance tests run with processes: three
/// instances on one PostgreSQL 15 with the settings `InstanceCluster` sets, ready = `/readyz`,
/// and nginx with `deploy/nginx.scale-out.conf`, whose upstream is exactly those instances and
/// whose retry rule is the one the tests exercise.
@Suite(.timeLimit(.minutes(1)), .ownThreads) struct ComposeFileTests {
    /// compose.yaml as JSON (PyYAML, which scripts/test installs).
    static func compose() throws -> [String: Any] {
        let path = NginxProxy.repositoryRoot.appendingPathComponent("deploy/compose.yaml").path
        let run = try ChildProcess.run(
            "/usr/bin/env", ["python3", "-c", "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)", path],
            environment: ProcessInfo.processInfo.environment)
        try #require(run.status == 0, "python3 could not read compose.yaml: \(String(decoding: run.stderr, as: UTF8.self))")
        return try #require(try JSONSerialization.jsonObject(with: Data(run.stdout)) as? [String: Any])
    }

    @Test func composeFileDescribesTheTestedSetup() throws {
        let services = try #require(try Self.compose()["services"] as? [String: [String: Any]])
        let instances = services.filter { ($0.value["environment"] as? [String: Any])?["BLUELIBRARY_DATABASE_URL"] != nil }
        #expect(instances.keys.sorted() == ["bluelibrary-1", "bluelibrary-2", "bluelibrary-3"])
        let postgres = try #require(services["postgres"])
        #expect((postgres["image"] as? String)?.hasPrefix("postgres:15") == true)

        var urls = Set<String>()
        var trusted = Set<String>()
        for (name, instance) in instances {
            let environment = try #require(instance["environment"] as? [String: Any])
            let url = try #require(environment["BLUELIBRARY_DATABASE_URL"] as? String)
            urls.insert(url)
            #expect(url.hasPrefix("postgres://") && url.contains("@postgres:5432/"), "\(name): \(url)")
            // Every setting InstanceCluster gives the processes for the same reason is here too.
            for key in InstanceCluster.baseEnvironment(databaseURL: url).keys where key != "BLUELIBRARY_EVENT_LOOPS" && key != "BLUELIBRARY_LOG_LEVEL" {
                #expect(environment[key] != nil, "\(name) lacks \(key)")
            }
            #expect(Int(environment["BLUELIBRARY_DATABASE_POOL_SIZE"] as? String ?? "") != nil, "\(name): pool size")
            #expect(environment["BLUELIBRARY_PORT"] as? String == "8080", "\(name): nginx expects port 8080")
            trusted.insert(environment["BLUELIBRARY_TRUSTED_PROXIES"] as? String ?? "")
            let health = (instance["healthcheck"] as? [String: Any])?["test"] as? [String]
            #expect(health == ["CMD", "bluelibrary", "healthcheck"], "\(name): ready means GET /readyz answers 200")
            let dependsOn = (instance["depends_on"] as? [String: [String: String]])?["postgres"]?["condition"]
            #expect(dependsOn == "service_healthy", "\(name) starts once PostgreSQL is ready")
        }
        #expect(urls.count == 1, "every instance on the same database: \(urls)")
        // One data directory for all, as InstanceCluster runs them (a shared cover cache).
        let dataVolumes = Set(instances.values.map { ($0["volumes"] as? [String] ?? []).filter { $0.hasSuffix(":/data") } })
        #expect(dataVolumes.count == 1 && dataVolumes.first?.count == 1, "\(dataVolumes)")

        // nginx mounts the scale-out config, and the instances trust exactly its address.
        let nginx = try #require(services["nginx"])
        let volumes = nginx["volumes"] as? [String] ?? []
        #expect(volumes.contains { $0.hasPrefix("./nginx.scale-out.conf:/etc/nginx/conf.d/") }, "\(volumes)")
        let address = ((nginx["networks"] as? [String: [String: String]])?.values.first?["ipv4_address"]) ?? "?"
        #expect(trusted == ["\(address)/32"], "trusted proxies \(trusted), nginx at \(address)")

        // Its upstream is those instances, and its retry rule the one the tests run with.
        let site = try NginxProxy.deployFile("nginx.scale-out.conf")
        let upstream = site.split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: #"^\s*server (bluelibrary-\d+):8080\b"#, options: .regularExpression) else { return nil }
            return String(line[range]).replacingOccurrences(of: "server", with: "").trimmingCharacters(in: .whitespaces)
                .replacingOccurrences(of: ":8080", with: "")
        }
        #expect(upstream.sorted() == instances.keys.sorted())
        // (Without `non_idempotent`: a POST or PATCH that reached an instance is never sent twice.)
        let retries = site.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("proxy_next_upstream ") }
        #expect(retries == ["proxy_next_upstream error timeout http_502 http_503;"])
    }

    @Test func scaleOutConfigLoadsInNginx() throws {
        // No instance listens on these ports: nginx must start all the same, and answer 502.
        let ports = try (0..<3).map { _ in try NginxProxy.freePort() }
        let proxy = try NginxProxy(instancePorts: ports)
        let response = try RawHTTPClient.request(port: proxy.port, path: "/healthz")
        #expect(response.status == 502)
    }
}
