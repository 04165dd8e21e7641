#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// A throwaway PostgreSQL (15) cluster for tests: `initdb` into a fresh temporary directory, then
/// a server on 127.0.0.1 at a free port (no Unix socket), trusting every local connection, with
/// `fsync` off. PostgreSQL refuses to run as root, so when the tests run as root the cluster
/// belongs to, and runs as, the system user `bluelibrary-test` (created with `useradd` when
/// missing); otherwise it runs as the current user.
///
/// ``shared()`` is one cluster per test process (stopped at exit); each test takes a fresh empty
/// database from it with ``makeDatabase()``. A fault test (the server stopped under load) makes
/// its own `PostgresServer()` and calls ``stop()`` and ``start()``; it is removed when released.
public final class PostgresServer: Sendable {
    /// PostgreSQL 15's programs (what CI installs), else those of the newest version installed.
    public static let binDirectory: String = {
        let preferred = "/usr/lib/postgresql/15/bin"
        let installed = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        let candidates = [preferred] + installed.compactMap(Int.init).sorted(by: >).map { "/usr/lib/postgresql/\($0)/bin" }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") } ?? preferred
    }()
    public static let unprivilegedUser = "bluelibrary-test"

    /// Holds `data/` (the cluster) and `server.log`.
    public let directory: String
    public let port: Int
    private let databaseCount = Atomic<Int>(0)

    public var dataDirectory: String { directory + "/data" }
    public var logFile: String { directory + "/server.log" }

    /// The URL of `database` on this server, as the superuser `postgres`.
    public func url(database: String = "postgres") -> String {
        "postgresql://postgres@127.0.0.1:\(port)/\(database)"
    }

    /// Creates and starts a new cluster.
    public convenience init() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binDirectory + "/initdb") else {
            throw ChildProcess.SpawnFailure(description: "PostgreSQL is not installed (scripts/test installs the Debian package postgresql)")
        }
        try self.init(prefix: "bluelibrary-postgres") { data in
            try Self.run(Self.binDirectory + "/initdb", [
                "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions",
            ])
        } settings: { port in
            """

                # bluelibrary tests
                listen_addresses = '127.0.0.1'
                port = \(port)
                unix_socket_directories = ''
                max_connections = 200
                shared_buffers = 32MB
                fsync = off
                synchronous_commit = off
                full_page_writes = off

                """
        }
    }

    /// Creates and starts a streaming replica of `primary` (a hot standby, from a base backup
    /// of it), on a port of its own.
    public convenience init(standbyOf primary: PostgresServer) throws {
        try self.init(prefix: "bluelibrary-standby") { data in
            try Self.run(Self.binDirectory + "/pg_basebackup", [
                "-h", "127.0.0.1", "-p", String(primary.port), "-U", "postgres", "-D", data, "-R", "-X", "stream", "--checkpoint=fast", "--no-sync",
            ])
        } settings: { port in
            """

                # bluelibrary tests: a standby
                port = \(port)
                hot_standby = on
                hot_standby_feedback = on

                """
        }
    }

    /// A cluster in a new directory that the user PostgreSQL runs as owns: `make` fills its
    /// data directory (initdb, or a base backup), `settings` (given the port) go at the end of
    /// its postgresql.conf, and it starts. Everything is removed when a step fails.
    private init(prefix: String, make: (String) throws -> Void, settings: (Int) -> String) throws {
        directory = try TemporaryDirectory.create(prefix: prefix)
        port = try NginxProxy.freePort()
        do {
            if let owner = try Self.runAsUser() {
                guard chown(directory, owner.uid, owner.gid) == 0 else {
                    throw ChildProcess.SpawnFailure(description: "chown \(directory): \(String(cString: strerror(errno)))")
                }
            }
            try make(directory + "/data")
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/data/postgresql.conf"))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(settings(port).utf8))
            try handle.close()
            try start()
        } catch {
            Self.remove(directory)
            throw error
        }
    }

    deinit {
        try? Self.run(Self.binDirectory + "/pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"])
        Self.remove(directory)
    }

    /// Runs `sql` on `database` of this server with psql and returns what it printed (rows
    /// unaligned, `|` between columns); throws with psql's output when it fails.
    @discardableResult
    public func execute(_ sql: String, database: String = "postgres") throws -> String {
        let outcome = try ChildProcess.run(
            Self.binDirectory + "/psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url(database: database), "-c", sql],
            environment: Self.environment, mergeStderr: true)
        let output = String(decoding: outcome.stdout, as: UTF8.self)
        guard outcome.status == 0 else { throw ChildProcess.SpawnFailure(description: "psql \(sql): \(output)") }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Removes `path`, trying again while the server's last processes finish writing into it.
    private static func remove(_ path: String) {
        eventually(timeout: .seconds(2), pollingEvery: .milliseconds(10)) {
            try? FileManager.default.removeItem(atPath: path)
            return !FileManager.default.fileExists(atPath: path)
        }
    }

    /// Starts the (stopped) server and waits until it accepts connections.
    public func start() throws {
        try Self.run(Self.binDirectory + "/pg_ctl", ["-D", dataDirectory, "-l", logFile, "-w", "-t", "60", "start"])
    }

    /// Stops the server the fast way: every client connection is closed at once (its next
    /// statement fails; a running one fails with SQLSTATE 57P01), then the server exits.
    public func stop() throws {
        try Self.run(Self.binDirectory + "/pg_ctl", ["-D", dataDirectory, "-m", "fast", "-w", "-t", "60", "stop"])
    }

    /// The URL of a new, empty database (`t_1`, `t_2`, … on this server).
    public func makeDatabase() throws -> String {
        let name = "t_\(databaseCount.add(1, ordering: .relaxed).newValue)"
        try execute("CREATE DATABASE \(name)")
        return url(database: name)
    }

    // MARK: - The one shared cluster

    private static let sharedServer = Mutex<PostgresServer?>(nil)

    /// The cluster of this test process, started by the first call and stopped when the
    /// process exits.
    public static func shared() throws -> PostgresServer {
        try sharedServer.withLock { server in
            if let server { return server }
            let started = try PostgresServer()
            server = started
            atexit { PostgresServer.stopSharedAtExit() }
            return started
        }
    }

    /// At exit (no threads to spawn children with): an immediate shutdown by signal, then the
    /// directory goes.
    private static func stopSharedAtExit() {
        guard let server = sharedServer.withLock({ $0 }) else { return }
        if let pidLine = try? String(contentsOfFile: server.dataDirectory + "/postmaster.pid", encoding: .utf8)
            .split(separator: "\n").first, let pid = pid_t(pidLine) {
            kill(pid, SIGQUIT)
            // Not our child: watch it go (briefly), so no file is written after the removal.
            eventually(timeout: .seconds(5), pollingEvery: .milliseconds(10)) { kill(pid, 0) != 0 }
        }
        remove(server.directory)
    }

    // MARK: - Running the tools

    /// Runs a PostgreSQL program as the cluster's owner; throws with its output when it fails.
    private static func run(_ program: String, _ arguments: [String]) throws {
        var path = program
        var argv = arguments
        if try runAsUser() != nil {
            path = "/usr/sbin/runuser"
            argv = ["-u", unprivilegedUser, "--", program] + arguments
        }
        let outcome = try ChildProcess.run(path, argv, environment: environment, mergeStderr: true)
        guard outcome.status == 0 else {
            let name = (program as NSString).lastPathComponent
            throw ChildProcess.SpawnFailure(
                description: "\(name) \(arguments.joined(separator: " ")) exited with \(outcome.status): "
                    + String(decoding: outcome.stdout, as: UTF8.self))
        }
    }

    /// No PG* variable of ours leaks into the tools; a locale they accept.
    private static var environment: [String: String] {
        ChildProcess.environment(dropping: { $0.hasPrefix("PG") || $0.hasPrefix("LC_") }, adding: ["LANG": "C"])
    }

    /// The user PostgreSQL (and what runs it, such as Patroni) must run as: `unprivilegedUser`
    /// (created when missing) when the tests run as root, else nil (the current user).
    public static func unprivilegedOwner() throws -> (uid: uid_t, gid: gid_t)? { try runAsUser() }

    /// The unprivileged user to run as (created when missing), or nil when not root.
    private static func runAsUser() throws -> (uid: uid_t, gid: gid_t)? {
        guard getuid() == 0 else { return nil }
        if let user = lookUp(unprivilegedUser) { return user }
        let outcome = try ChildProcess.run(
            "/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", unprivilegedUser],
            environment: environment, mergeStderr: true
        )
        // Another test process may have created it meanwhile: look again either way.
        guard let user = lookUp(unprivilegedUser) else {
            throw ChildProcess.SpawnFailure(description: "useradd \(unprivilegedUser): \(String(decoding: outcome.stdout, as: UTF8.self))")
        }
        return user
    }

    private static func lookUp(_ name: String) -> (uid: uid_t, gid: gid_t)? {
        guard let entry = getpwnam(name) else { return nil }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }
}
