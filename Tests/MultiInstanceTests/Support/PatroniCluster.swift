#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPTestSupport

/// What `deploy/compose.patroni.yaml` runs, with processes: one etcd (Debian's `etcd-server`)
/// and three PostgreSQL 15 nodes under Patroni (Debian's `patroni`), running
/// `deploy/patroni/patroni.yml` with only the addresses (free ports on 127.0.0.1), directories
/// and authentication (trust on 127.0.0.1) swapped, `fsync` off, and the database made with
/// psql instead of the post-bootstrap script (which reads a secret file), in a temporary
/// directory under $TMPDIR; as the
/// unprivileged user PostgreSQL needs when the tests run as root. ``databaseURL`` names all
/// three nodes with `target_session_attrs=read-write`, as the compose file's instances do, so
/// libpq connects to whichever is the primary.
final class PatroniCluster: @unchecked Sendable {  // `nodes` is set in init only; the rest is immutable.
    struct Node {
        var name: String
        var restPort: Int
        var postgresPort: Int
        var directory: String
        var configFile: String
        var process: RunningChild
        var dataDirectory: String { directory + "/data" }
    }

    /// One member as Patroni's REST API (`GET /cluster`) lists it.
    struct Member: CustomStringConvertible {
        var name: String
        var role: String
        var state: String
        var timeline: Int?
        var description: String { "\(name) \(role) \(state) tl=\(timeline.map(String.init) ?? "-")" }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let patroni = "/usr/bin/patroni"
    static let patronictl = "/usr/bin/patronictl"
    static let etcdProgram = "/usr/bin/etcd"
    /// Debian's Python, which Debian's Patroni (and PyYAML) is installed for (not a pyenv one).
    static let python = "/usr/bin/python3"
    static let database = "bluelibrary"

    /// Why the cluster cannot run here, or nil when it can.
    static var missing: String? {
        for program in [patroni, patronictl, etcdProgram, python] where !FileManager.default.isExecutableFile(atPath: program) {
            return "\(program) is missing (scripts/test installs the Debian packages patroni and etcd-server)"
        }
        return nil
    }

    let directory: String
    let etcdPort: Int
    private let etcd: RunningChild
    private(set) var nodes: [Node] = []

    /// All three nodes; libpq takes the one that accepts writes.
    var databaseURL: String {
        "postgres://postgres@" + nodes.map { "127.0.0.1:\($0.postgresPort)" }.joined(separator: ",")
            + "/\(Self.database)?target_session_attrs=read-write"
    }

    /// Starts etcd and three Patroni nodes, waits until one leads with a synchronous standby
    /// and the third replicating, and creates the database.
    init() throws {
        if let missing = Self.missing { throw Failure(description: missing) }
        directory = try TemporaryDirectory.create(prefix: "bluelibrary-patroni")
        let owner = try PostgresServer.unprivilegedOwner()
        func own(_ path: String) throws {
            guard let owner else { return }
            guard chown(path, owner.uid, owner.gid) == 0 else {
                throw Failure(description: "chown \(path): \(String(cString: strerror(errno)))")
            }
        }
        try own(directory)
        etcdPort = try NginxProxy.freePort()
        let peerPort = try NginxProxy.freePort()
        try FileManager.default.createDirectory(atPath: directory + "/etcd", withIntermediateDirectories: true)
        try own(directory + "/etcd")
        etcd = try Self.start(Self.etcdProgram, [
            "--name", "etcd", "--data-dir", directory + "/etcd/data",
            "--listen-client-urls", "http://127.0.0.1:\(etcdPort)", "--advertise-client-urls", "http://127.0.0.1:\(etcdPort)",
            "--listen-peer-urls", "http://127.0.0.1:\(peerPort)", "--initial-advertise-peer-urls", "http://127.0.0.1:\(peerPort)",
            "--initial-cluster", "etcd=http://127.0.0.1:\(peerPort)",
        ], log: directory + "/etcd/etcd.log", home: directory + "/etcd", owner: owner)
        do {
            guard eventually(timeout: .seconds(20), pollingEvery: .milliseconds(20), {
                (try? RawHTTPClient.request(port: etcdPort, path: "/health", receiveTimeout: 2))?.status == 200 || !etcd.isRunning
            }), etcd.isRunning else { throw Failure(description: "etcd did not start: \(log(directory + "/etcd/etcd.log"))") }

            for number in 1...3 {
                let name = "node\(number)"
                let nodeDirectory = directory + "/" + name
                try FileManager.default.createDirectory(atPath: nodeDirectory, withIntermediateDirectories: true)
                try own(nodeDirectory)
                let (restPort, postgresPort) = (try NginxProxy.freePort(), try NginxProxy.freePort())
                let configFile = nodeDirectory + "/patroni.yml"
                try Self.writeConfig(to: configFile, overrides: [
                    "name": name,
                    "restapi": ["listen": "127.0.0.1:\(restPort)", "connect_address": "127.0.0.1:\(restPort)"],
                    "etcd3": ["hosts": "127.0.0.1:\(etcdPort)"],
                    // The deploy file's script makes a role with a password from a secret file.
                    "bootstrap": ["post_bootstrap": NSNull()],
                    "postgresql": [
                        "listen": "127.0.0.1:\(postgresPort)", "connect_address": "127.0.0.1:\(postgresPort)",
                        "data_dir": nodeDirectory + "/data", "bin_dir": PostgresServer.binDirectory,
                        "pgpass": nodeDirectory + "/pgpass",
                        "pg_hba": ["host replication replicator 127.0.0.1/32 trust", "host all all 127.0.0.1/32 trust"],
                        // Throwaway data on a busy test machine (a killed postmaster loses nothing the
                        // kernel has). Not full_page_writes = off: pg_rewind needs them, and without
                        // it the old primary cannot come back after a SIGKILL.
                        "parameters": ["unix_socket_directories": nodeDirectory, "fsync": "off", "shared_buffers": "32MB"],
                    ],
                ])
                let process = try Self.start(Self.patroni, [configFile], log: nodeDirectory + "/patroni.log", home: nodeDirectory, owner: owner)
                nodes.append(Node(name: name, restPort: restPort, postgresPort: postgresPort, directory: nodeDirectory,
                                  configFile: configFile, process: process))
            }
            guard waitUntilHealthy(timeout: .seconds(90)) else {
                throw Failure(description: "the Patroni cluster did not come up: \(members().map(\.description))\n\(logTail())")
            }
            guard let leader = nodes.first(where: { $0.name == leaderName() }) else { throw Failure(description: "the leader went away") }
            let created = try ChildProcess.run(
                PostgresServer.binDirectory + "/psql",
                ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", "postgresql://postgres@127.0.0.1:\(leader.postgresPort)/postgres",
                 "-c", "CREATE DATABASE \(Self.database)"],
                environment: Self.environment(home: directory), mergeStderr: true)
            guard created.status == 0 else {
                throw Failure(description: "CREATE DATABASE: \(String(decoding: created.stdout, as: UTF8.self))")
            }
            // On every node before an instance starts: libpq tries the next host after a refused
            // connection, not after a FATAL error such as "database does not exist".
            for node in nodes {
                let url = "postgresql://postgres@127.0.0.1:\(node.postgresPort)/\(Self.database)"
                guard eventually(timeout: .seconds(30), pollingEvery: .milliseconds(50), {
                    (try? ChildProcess.run(PostgresServer.binDirectory + "/psql", ["-X", "-q", "-d", url, "-c", "SELECT 1"],
                                           environment: Self.environment(home: directory)))?.status == 0
                }) else { throw Failure(description: "\(node.name) never had the database") }
            }
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// Ends everything at once: Patroni first (so none starts a PostgreSQL again), then each
    /// node's postmaster (an immediate shutdown), then etcd; then the directory goes.
    private func stop() {
        for node in nodes where node.process.isRunning {
            kill(node.process.processIdentifier, SIGKILL)
            node.process.waitUntilExit()
        }
        var postmasters: [pid_t] = []
        for node in nodes {
            if let pid = postmasterPID(node), kill(pid, SIGQUIT) == 0 { postmasters.append(pid) }
        }
        // Not our children: watch them go, so no file is written after the removal.
        eventually(timeout: .seconds(10), pollingEvery: .milliseconds(10)) { postmasters.allSatisfy { kill($0, 0) != 0 } }
        if etcd.isRunning {
            kill(etcd.processIdentifier, SIGKILL)
            etcd.waitUntilExit()
        }
        eventually(timeout: .seconds(5), pollingEvery: .milliseconds(10)) {
            try? FileManager.default.removeItem(atPath: directory)
            return !FileManager.default.fileExists(atPath: directory)
        }
    }

    // MARK: - What the tests ask and do

    /// The members as the first node that answers lists them (empty when none answers).
    func members() -> [Member] {
        for node in nodes {
            guard let response = try? RawHTTPClient.request(port: node.restPort, path: "/cluster", receiveTimeout: 2),
                response.status == 200, let list = (try? response.json())?["members"] as? [[String: Any]]
            else { continue }
            return list.compactMap { entry in
                guard let name = entry["name"] as? String, let role = entry["role"] as? String else { return nil }
                return Member(name: name, role: role, state: entry["state"] as? String ?? "?", timeline: entry["timeline"] as? Int)
            }
        }
        return []
    }

    /// The leader's name, if one is running.
    func leaderName() -> String? {
        members().first { $0.role == "leader" && $0.state == "running" }?.name
    }

    /// True once a leader runs with a synchronous standby and a third member replicating, all
    /// on one timeline: the shape a failover needs.
    func isHealthy() -> Bool {
        let members = members()
        let running = members.filter { ["running", "streaming"].contains($0.state) }
        return running.count == 3 && Set(running.compactMap(\.timeline)).count == 1
            && running.filter { $0.role == "leader" }.count == 1 && running.contains { $0.role == "sync_standby" }
    }

    @discardableResult
    func waitUntilHealthy(timeout: Duration) -> Bool {
        eventually(timeout: timeout, pollingEvery: .milliseconds(100)) { isHealthy() }
    }

    /// The process id in a node's `postmaster.pid`, if there is one.
    func postmasterPID(_ node: Node) -> pid_t? {
        guard let text = try? String(contentsOfFile: node.dataDirectory + "/postmaster.pid", encoding: .utf8),
            let line = text.split(separator: "\n").first
        else { return nil }
        return pid_t(line)
    }

    /// SIGKILLs the leader's postmaster (no shutdown of any kind; its backends end as they
    /// notice); returns the leader's name.
    func killLeaderPostmaster() throws -> String {
        guard let name = leaderName(), let node = nodes.first(where: { $0.name == name }), let pid = postmasterPID(node) else {
            throw Failure(description: "no leader with a postmaster: \(members())")
        }
        guard kill(pid, SIGKILL) == 0 else { throw Failure(description: "kill \(pid): \(String(cString: strerror(errno)))") }
        return name
    }

    /// `patronictl switchover` from the leader to the synchronous standby (the only member
    /// Patroni lets take over in synchronous mode); returns (leader, candidate) once patronictl
    /// says it is done.
    func switchover() throws -> (from: String, to: String) {
        let members = members()
        guard let leader = members.first(where: { $0.role == "leader" })?.name,
            let candidate = members.first(where: { $0.role == "sync_standby" })?.name
        else { throw Failure(description: "no leader and synchronous standby: \(members)") }
        let outcome = try ChildProcess.run(
            Self.patronictl, ["-c", nodes[0].configFile, "switchover", "--leader", leader, "--candidate", candidate, "--force"],
            environment: Self.environment(home: directory), mergeStderr: true)
        let output = String(decoding: outcome.stdout, as: UTF8.self)
        guard outcome.status == 0, output.contains("Successfully switched over") else {
            throw Failure(description: "patronictl switchover exited with \(outcome.status): \(output)")
        }
        return (leader, candidate)
    }

    /// The end of every node's Patroni log (PostgreSQL's log lines are in it too) and etcd's.
    func logTail(lines: Int = 12) -> String {
        (nodes.map { "--- \($0.name):\n" + log($0.directory + "/patroni.log", lines: lines) }
            + ["--- etcd:\n" + log(directory + "/etcd/etcd.log", lines: 5)]).joined(separator: "\n")
    }

    private func log(_ path: String, lines: Int = 12) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    // MARK: - Starting the programs

    /// The deploy file with `overrides` merged in (a null removes a key), as YAML, by Debian's
    /// Python and its PyYAML (which Patroni itself needs).
    private static func writeConfig(to path: String, overrides: [String: Any]) throws {
        let script = """
            import json, sys, yaml
            config = yaml.safe_load(open(sys.argv[1]))
            def merge(base, over):
                for key, value in over.items():
                    if value is None: base.pop(key, None)
                    elif isinstance(value, dict) and isinstance(base.get(key), dict): merge(base[key], value)
                    else: base[key] = value
            merge(config, json.loads(sys.argv[2]))
            with open(sys.argv[3], "w") as out: yaml.safe_dump(config, out)
            """
        let source = NginxProxy.repositoryRoot.appendingPathComponent("deploy/patroni/patroni.yml").path
        let json = String(decoding: try JSONSerialization.data(withJSONObject: overrides), as: UTF8.self)
        let outcome = try ChildProcess.run(python, ["-c", script, source, json, path], environment: environment(home: "/tmp"), mergeStderr: true)
        guard outcome.status == 0 else {
            throw Failure(description: "writing \(path): \(String(decoding: outcome.stdout, as: UTF8.self))")
        }
    }

    /// No PG*, PATRONI_* or locale variable of ours reaches the programs.
    private static func environment(home: String) -> [String: String] {
        ChildProcess.environment(
            dropping: { $0.hasPrefix("PG") || $0.hasPrefix("PATRONI") || $0.hasPrefix("LC_") || $0.hasPrefix("ETCD") || $0.hasPrefix("PYTHON") },
            adding: ["LANG": "C.UTF-8", "HOME": home])
    }

    /// Starts `program` with its output appended to `log`, as `owner` when given (`setpriv`
    /// and the shell both end in exec, so the process id is the program's).
    private static func start(_ program: String, _ arguments: [String], log: String, home: String, owner: (uid: uid_t, gid: gid_t)?) throws -> RunningChild {
        let redirect = ["/bin/sh", "-c", #"log="$1"; shift; exec "$@" >>"$log" 2>&1"#, "sh", log, program] + arguments
        let command = owner.map { ["/usr/bin/setpriv", "--reuid=\($0.uid)", "--regid=\($0.gid)", "--clear-groups", "--"] + redirect } ?? redirect
        return try RunningChild(command[0], Array(command.dropFirst()), environment: environment(home: home), captureOutput: false)
    }
}
