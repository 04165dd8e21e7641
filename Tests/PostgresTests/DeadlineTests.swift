import Dispatch
import Foundation
import HTTPTestSupport
import Postgres
import Synchronization
import TestThreads
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A server that stops answering (its backend process frozen with SIGSTOP: to the client it
/// looks like a paused or partitioned server, the connection stays open) must cost a caller
/// at most the response timeout, then an unavailable error, never an unbounded wait.
@Suite(.serialized, .ownThreads) struct DeadlineTests {
    /// Each way a statement reaches the server: the extended protocol (`scalar`), the simple
    /// one (`execute`), single-row streaming (`forEachRow`), and preparing a new statement.
    static let operations: [String] = ["scalar", "execute", "forEachRow", "prepare"]

    @Test(arguments: operations)
    func aFrozenServerFailsTheStatementAndBreaksTheConnection(operation: String) throws {
        let connection = try PostgresConnection(
            url: try PostgresServer.shared().makeDatabase(), responseTimeout: .milliseconds(300))
        // Prepared before the freeze, so the scalar case waits for an execution, not a Parse.
        #expect(try connection.scalar("SELECT 1", as: Int.self) == 1)
        let handover = Handover(connection)
        let error = try Self.whileFrozen(connection.backendPID) {
            postgresError {
                let connection = handover.value
                switch operation {
                case "scalar": _ = try connection.scalar("SELECT 1", as: Int.self)
                case "execute": try connection.execute("SELECT 2")
                case "forEachRow": try connection.forEachRow("SELECT 1") { _ in }
                default: _ = try connection.scalar("SELECT 3 + $1", [.integer(1)], as: Int.self)
                }
            }
        }
        #expect(error?.kind == .connection, "\(String(describing: error))")
        #expect(error?.isUnavailable == true)
        #expect(connection.isBroken)
    }

    @Test func aPoolDiscardsTheConnectionOfAFrozenServerAndRecovers() throws {
        var configuration = PostgresPool.Configuration(url: try PostgresServer.shared().makeDatabase(), size: 1)
        configuration.responseTimeout = .milliseconds(300)
        let pool = PostgresPool(configuration)
        let frozen = try pool.withConnection { $0.backendPID }
        let error = try Self.whileFrozen(frozen) {
            postgresError { try pool.withConnection { try $0.scalar("SELECT 1", as: Int.self) } }
        }
        #expect(error?.kind == .connection, "\(String(describing: error))")
        #expect(error?.isUnavailable == true)
        #expect(pool.statistics.open == 0, "the broken connection was discarded")
        // Thawed, the server works again, on a new connection.
        #expect(try pool.withConnection { try $0.scalar("SELECT 1", as: Int.self) } == 1)
        #expect(try pool.withConnection { $0.backendPID } != frozen)
    }

    @Test func theDefaultsBoundTheResponseByTheStatementTimeout() {
        let configuration = PostgresPool.Configuration(url: "postgresql://x@127.0.0.1/x", statementTimeout: .seconds(30))
        #expect(configuration.responseTimeout == .seconds(35))
    }

    /// Freezes the server process `pid` (SIGSTOP), runs `body` on another thread and returns
    /// its result; thaws the process (SIGCONT) in any case. A body still waiting after a
    /// minute (the fault this suite looks for) is recorded as an issue instead of hanging the run.
    private static func whileFrozen<T: Sendable>(_ pid: Int32, _ body: @escaping @Sendable () -> T?) throws -> T? {
        try #require(kill(pid, SIGSTOP) == 0, "cannot stop the backend \(pid): errno \(errno)")
        defer { kill(pid, SIGCONT) }
        let outcome = Outcome<T>()
        let thread = Thread {
            outcome.value.withLock { $0 = body() }
            outcome.done.signal()
        }
        thread.start()
        guard outcome.done.wait(timeout: .now() + .seconds(60)) == .success else {
            Issue.record("the call did not return while the server was frozen")
            kill(pid, SIGCONT)
            outcome.done.wait()
            return nil
        }
        return outcome.value.withLock { $0 }
    }
}

private final class Outcome<T: Sendable>: Sendable {
    let value = Mutex<T?>(nil)
    let done = DispatchSemaphore(value: 0)
}
