import Foundation
import HTTPTestSupport
import Postgres
import Storage
import Synchronization

/// A fresh, empty database on the test process's throwaway PostgreSQL, and pools on it (one
/// pool per simulated instance).
struct TestDatabase {
    let url: String

    init() throws {
        url = try PostgresServer.shared().makeDatabase()
    }

    func pool(size: Int = 4) -> PostgresPool {
        PostgresPool(PostgresPool.Configuration(url: url, size: size))
    }

    /// A pool with the schema applied.
    func migratedPool(size: Int = 4) throws -> PostgresPool {
        let pool = pool(size: size)
        try PostgresSchema.migrate(pool: pool)
        return pool
    }
}

/// Runs `body(i)` for `0..<count` on as many threads, started together, and returns each
/// result (or error) in order of `i`.
func concurrently<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) throws -> T) -> [Result<T, any Error>] {
    let results = Mutex<[Int: Result<T, any Error>]>([:])
    let start = DispatchSemaphore(value: 0)
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread.detachNewThread {
            start.wait()
            let result = Result { try body(index) }
            results.withLock { $0[index] = result }
            group.leave()
        }
    }
    for _ in 0..<count { start.signal() }
    group.wait()
    return results.withLock { all in (0..<count).map { all[$0]! } }
}
