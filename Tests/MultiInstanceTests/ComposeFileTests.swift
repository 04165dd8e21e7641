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
    /// compose.yaml (or another compose file of deploy/) as JSON (PyYAML, which scripts/test installs).
    static func compose(_ name: String = "compose.yaml") throws -> [String: Any] {
        let path = NginxProxy.repositoryRoot.appendingPathComponent("deploy/\(name)").path
        let run = try ChildProcess.run(
            "/usr/bin/env", ["python3", "-c", "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)", path],
            environment: ProcessInfo.processInfo.environment)
        try #require(run.status == 0, "python3 could not read \(name): \(String(decoding: run.stderr, as: UTF8.self))")
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

    /// Both compose files as locked as the Security section says: nothing published beyond
    /// 127.0.0.1, every BlueLibrary service started with a token, every secret a Compose secret
    /// (a file, mounted under /run/secrets) and none in any environment value, which
    /// `docker inspect` would show. (No Docker engine runs here, so `docker compose config`
    /// cannot; this reads the files as Compose would and checks what they say.)
    @Test(arguments: ["compose.yaml", "compose.sqlite.yaml"]) func composeFilesAreLocked(_ name: String) throws {
        let compose = try Self.compose(name)
        let services = try #require(compose["services"] as? [String: [String: Any]])
        let declared = compose["secrets"] as? [String: [String: Any]] ?? [:]
        for (secret, definition) in declared {
            let file = try #require(definition["file"] as? String, "\(name): secret \(secret) is a file")
            #expect(file.hasPrefix("./secrets/"), "\(name): \(secret) from \(file) (deploy/secrets/, which git ignores)")
        }
        var bluelibraries = 0
        for (service, definition) in services {
            for port in definition["ports"] as? [String] ?? [] {
                #expect(port.hasPrefix("127.0.0.1:"), "\(name): \(service) publishes \(port) beyond this host")
            }
            let environment = (definition["environment"] as? [String: Any] ?? [:]).mapValues { "\($0)" }
            let mounted = Set((definition["secrets"] as? [Any] ?? []).compactMap { ($0 as? String) ?? (($0 as? [String: Any])?["source"] as? String) })
            for secret in mounted { #expect(declared[secret] != nil, "\(name): \(service) mounts the undeclared secret \(secret)") }
            for (key, value) in environment {
                #expect(!["BLUELIBRARY_TOKEN", "POSTGRES_PASSWORD", "PGPASSWORD"].contains(key), "\(name): \(service) has \(key) in its environment")
                #expect(!value.contains("${"), "\(name): \(service) \(key) interpolates a variable: \(value)")
                if key.hasSuffix("_FILE") {
                    let secret = value.replacingOccurrences(of: "/run/secrets/", with: "")
                    #expect(value.hasPrefix("/run/secrets/") && mounted.contains(secret), "\(name): \(service) \(key)=\(value) is a mounted secret")
                }
                if key == "BLUELIBRARY_DATABASE_URL" {
                    let authority = value.components(separatedBy: "://").last?.split(separator: "@").dropLast().joined() ?? ""
                    #expect(!authority.contains(":") && !value.contains("password="), "\(name): \(service) has a password in its URL")
                    #expect(environment["BLUELIBRARY_DATABASE_PASSWORD_FILE"] != nil, "\(name): \(service) reads the password from a file")
                }
            }
            guard definition["image"] as? String == "bluelibrary" else { continue }
            bluelibraries += 1
            #expect(environment["BLUELIBRARY_TOKEN_FILE"] == "/run/secrets/bluelibrary_token", "\(name): \(service) starts with a token")
        }
        #expect(bluelibraries == (name == "compose.yaml" ? 3 : 1))
        if let postgres = services["postgres"] {
            let environment = postgres["environment"] as? [String: Any] ?? [:]
            let instance = services["bluelibrary-1"]?["environment"] as? [String: Any] ?? [:]
            #expect(environment["POSTGRES_PASSWORD_FILE"] as? String == instance["BLUELIBRARY_DATABASE_PASSWORD_FILE"] as? String,
                    "PostgreSQL and the instances read the one password file")
        }
    }

    @Test func scaleOutConfigLoadsInNginx() throws {
        // No instance listens on these ports: nginx must start all the same, and answer 502.
        let ports = try (0..<3).map { _ in try NginxProxy.freePort() }
        let proxy = try NginxProxy(instancePorts: ports)
        let response = try RawHTTPClient.request(port: proxy.port, path: "/healthz")
        #expect(response.status == 502)
    }
}
