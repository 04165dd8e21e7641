#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPTestSupport

/// What `deploy/compose.yaml` runs, with processes: `count` real `bluelibrary serve` on one
/// PostgreSQL database (`BLUELIBRARY_DATABASE_URL`), started at once (their migrations meet at
/// the advisory lock), sharing one data directory (the cover cache, archive spool files), and a
/// real nginx in front running `deploy/nginx.scale-out.conf` with only the addresses swapped.
final class InstanceCluster {
    let databaseURL: String
    let instances: [ServerProcess]
    let proxy: NginxProxy
    private let directory: TemporaryDirectory

    /// The environment every instance gets (before `environment` is laid over it): the
    /// database, nginx trusted, one event loop and the default pool (small machines, several
    /// instances).
    static func baseEnvironment(databaseURL: String) -> [String: String] {
        ["BLUELIBRARY_DATABASE_URL": databaseURL,
         "BLUELIBRARY_TRUSTED_PROXIES": "127.0.0.1/32",
         "BLUELIBRARY_EVENT_LOOPS": "1",
         "BLUELIBRARY_LOG_LEVEL": "info"]
    }

    /// Starts `count` instances on `databaseURL` and nginx in front of them.
    /// - Throws: when an instance or nginx does not start (with the instance's log).
    init(databaseURL: String, count: Int = 3, environment: [String: String] = [:]) throws {
        self.databaseURL = databaseURL
        let directory = try TemporaryDirectory(prefix: "bluelibrary-instances")
        let env = Self.baseEnvironment(databaseURL: databaseURL).merging(environment) { $1 }
        // Spawned one after the other, then waited for together: they start (and migrate) at once.
        let instances = try (0..<count).map { _ in
            try ServerProcess(environment: env, dataDirectory: directory.path, waitUntilListening: false)
        }
        for instance in instances { try instance.waitUntilListening(timeout: 30) }
        self.directory = directory
        self.instances = instances
        proxy = try NginxProxy(instancePorts: instances.map(\.port))
    }

    /// nginx's port: where clients send requests.
    var port: Int { proxy.port }

    /// Kills instance `index` with SIGKILL (no shutdown of any kind) and waits for it to be gone.
    func kill(_ index: Int) {
        instances[index].signal(SIGKILL)
        _ = instances[index].waitForExit(timeout: 10)
    }

    /// Every instance still running (none crashed).
    var allRunning: Bool { instances.allSatisfy(\.process.isRunning) }

    /// The last lines of every instance's log, for a failure message.
    /// Every instance's log lines above `info` (what a 5xx logged).
    func errorLines() -> String {
        instances.enumerated().map { index, instance in
            "--- instance \(index) (port \(instance.port)):\n"
                + instance.logLines().filter { !$0.contains(#""level":"info""#) }.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    func logTail(lines: Int = 15) -> String {
        instances.enumerated().map { index, instance in
            "--- instance \(index) (port \(instance.port)):\n" + instance.logLines().suffix(lines).joined(separator: "\n")
        }.joined(separator: "\n")
    }
}
