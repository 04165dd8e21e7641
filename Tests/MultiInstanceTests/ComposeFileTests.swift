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
    @Test(arguments: ["compose.yaml", "compose.sqlite.yaml", "compose.patroni.yaml"]) func composeFilesAreLocked(_ name: String) throws {
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
                #expect(!["BLUELIBRARY_TOKEN", "POSTGRES_PASSWORD", "PGPASSWORD", "PATRONI_SUPERUSER_PASSWORD", "PATRONI_REPLICATION_PASSWORD",
                           "PATRONI_REWIND_PASSWORD"].contains(key), "\(name): \(service) has \(key) in its environment")
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
        #expect(bluelibraries == (name == "compose.sqlite.yaml" ? 1 : 3))
        if let postgres = services["postgres"] {
            let environment = postgres["environment"] as? [String: Any] ?? [:]
            let instance = services["bluelibrary-1"]?["environment"] as? [String: Any] ?? [:]
            #expect(environment["POSTGRES_PASSWORD_FILE"] as? String == instance["BLUELIBRARY_DATABASE_PASSWORD_FILE"] as? String,
                    "PostgreSQL and the instances read the one password file")
        }
    }

    /// compose.patroni.yaml against what PatroniFailoverTests runs: three instances on one
    /// multi-host URL naming the three Patroni nodes with `target_session_attrs=read-write`,
    /// each node running deploy/patroni/patroni.yml (which PatroniCluster runs too, with only
    /// addresses, directories and authentication swapped) under its own name and address, etcd
    /// where that file says, and nginx as in compose.yaml.
    @Test func patroniComposeFileDescribesTheTestedSetup() throws {
        let compose = try Self.compose("compose.patroni.yaml")
        let services = try #require(compose["services"] as? [String: [String: Any]])
        func environment(_ service: [String: Any]) -> [String: String] {
            (service["environment"] as? [String: Any] ?? [:]).mapValues { "\($0)" }
        }
        func address(_ service: [String: Any]?) -> String {
            ((service?["networks"] as? [String: [String: String]])?.values.first?["ipv4_address"]) ?? "?"
        }
        let instances = services.filter { environment($0.value)["BLUELIBRARY_DATABASE_URL"] != nil }
        #expect(instances.keys.sorted() == ["bluelibrary-1", "bluelibrary-2", "bluelibrary-3"])
        let nodes = services.filter { environment($0.value)["PATRONI_NAME"] != nil }
        #expect(nodes.keys.sorted() == ["postgres-1", "postgres-2", "postgres-3"])

        for (name, node) in nodes {
            let env = environment(node)
            #expect(node["image"] as? String == "bluelibrary-patroni", "\(name)")
            #expect(env["PATRONI_NAME"] == name)
            #expect(env["PATRONI_RESTAPI_CONNECT_ADDRESS"] == "\(address(node)):8008", "\(name): \(env)")
            #expect(env["PATRONI_POSTGRESQL_CONNECT_ADDRESS"] == "\(address(node)):5432", "\(name): \(env)")
            #expect((node["volumes"] as? [String] ?? []).contains("./patroni/patroni.yml:/etc/patroni/patroni.yml:ro"), "\(name)")
        }
        let url = "postgres://bluelibrary@" + nodes.keys.sorted().map { "\($0):5432" }.joined(separator: ",")
            + "/bluelibrary?target_session_attrs=read-write"
        for (name, instance) in instances {
            let env = environment(instance)
            #expect(env["BLUELIBRARY_DATABASE_URL"] == url, "\(name)")
            for key in InstanceCluster.baseEnvironment(databaseURL: url).keys where key != "BLUELIBRARY_EVENT_LOOPS" && key != "BLUELIBRARY_LOG_LEVEL" {
                #expect(env[key] != nil, "\(name) lacks \(key)")
            }
            #expect(env["BLUELIBRARY_PORT"] == "8080", "\(name): nginx expects port 8080")
            #expect(env["BLUELIBRARY_TRUSTED_PROXIES"] == "\(address(services["nginx"]))/32", "\(name) trusts exactly nginx")
            #expect((instance["healthcheck"] as? [String: Any])?["test"] as? [String] == ["CMD", "bluelibrary", "healthcheck"])
            let dependsOn = (instance["depends_on"] as? [String: [String: String]] ?? [:]).mapValues { $0["condition"] ?? "" }
            #expect(dependsOn == Dictionary(uniqueKeysWithValues: nodes.keys.map { ($0, "service_healthy") }), "\(name): \(dependsOn)")
        }
        let nginxVolumes = services["nginx"]?["volumes"] as? [String] ?? []
        #expect(nginxVolumes.contains { $0.hasPrefix("./nginx.scale-out.conf:/etc/nginx/conf.d/") }, "\(nginxVolumes)")

        // The Patroni file: etcd where the compose file runs it; the settings the failover
        // tests rely on; the standbys and the instances let in from the compose network.
        let patroni = try Self.compose("patroni/patroni.yml")
        #expect((patroni["etcd3"] as? [String: Any])?["hosts"] as? String == "etcd:2379" && services["etcd"] != nil)
        let bootstrap = try #require(patroni["bootstrap"] as? [String: Any])
        let dcs = try #require(bootstrap["dcs"] as? [String: Any])
        #expect(dcs["synchronous_mode"] as? Bool == true, "no acknowledged write lost in a failover")
        #expect(dcs["primary_start_timeout"] as? Int == 0, "a crashed primary fails over at once")
        let (ttl, loopWait, retryTimeout) = (dcs["ttl"] as? Int ?? 0, dcs["loop_wait"] as? Int ?? 0, dcs["retry_timeout"] as? Int ?? 0)
        #expect(loopWait >= 1 && ttl >= loopWait + 2 * retryTimeout && ttl <= 10, "ttl \(ttl), loop_wait \(loopWait), retry_timeout \(retryTimeout)")
        #expect(((dcs["postgresql"] as? [String: Any])?["use_pg_rewind"]) as? Bool == true)
        #expect(bootstrap["post_bootstrap"] as? String == "/usr/local/bin/patroni-post-bootstrap")
        let subnet = (((compose["networks"] as? [String: Any])?["library"] as? [String: Any])?["ipam"] as? [String: Any])
            .flatMap { ($0["config"] as? [[String: String]])?.first?["subnet"] } ?? "?"
        let hba = (patroni["postgresql"] as? [String: Any])?["pg_hba"] as? [String] ?? []
        #expect(hba.contains("host replication replicator \(subnet) scram-sha-256") && hba.contains("host all all \(subnet) scram-sha-256"),
                "\(hba) for \(subnet)")
    }

    @Test func scaleOutConfigLoadsInNginx() throws {
        // No instance listens on these ports: nginx must start all the same, and answer 502.
        let ports = try (0..<3).map { _ in try NginxProxy.freePort() }
        let proxy = try NginxProxy(instancePorts: ports)
        let response = try RawHTTPClient.request(port: proxy.port, path: "/healthz")
        #expect(response.status == 502)
    }
}
