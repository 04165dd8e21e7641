import Foundation
import HTTPTestSupport
import Postgres

/// A connection to a fresh, empty database of the test process's shared cluster.
func makeConnection() throws -> PostgresConnection {
    try PostgresConnection(url: try PostgresServer.shared().makeDatabase())
}

/// The URL of the database `connection` is connected to.
func currentURL(_ connection: PostgresConnection) throws -> String {
    try PostgresServer.shared().url(database: try connection.scalar("SELECT current_database()", as: String.self) ?? "")
}

struct TestFailure: Error, Equatable {
    let reason: String
}

/// Runs `body` on a new thread; `join()` waits for it and returns its result.
final class TestThread<T: Sendable>: @unchecked Sendable {
    // `result` is written once by the thread before `done.signal()` and read after `done.wait()`.
    private var result: Result<T, any Error>?
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () throws -> T) {
        Thread.detachNewThread { [self] in
            result = Result { try body() }
            done.signal()
        }
    }

    func join() throws -> T {
        done.wait()
        return try result!.get()
    }
}

/// The error `body` throws as a `PostgresError`, or nil when it throws none (or another type).
func postgresError<T>(_ body: () throws -> T) -> PostgresError? {
    do {
        _ = try body()
        return nil
    } catch let error as PostgresError {
        return error
    } catch {
        return nil
    }
}

/// Hands a connection to one other thread (a test's thread uses it only while the owner waits).
final class Handover<Value>: @unchecked Sendable {
    let value: Value

    init(_ value: Value) { self.value = value }
}
