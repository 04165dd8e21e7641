import Dispatch
import HTTPTestSupport
import Postgres
import TestThreads
import Testing

@Suite(.ownThreads) struct PoolTests {
    private func makePool(size: Int = 2, acquireTimeout: Duration = .seconds(30), statementTimeout: Duration? = .seconds(30)) throws -> PostgresPool {
        PostgresPool(.init(
            url: try PostgresServer.shared().makeDatabase(), size: size, acquireTimeout: acquireTimeout, statementTimeout: statementTimeout))
    }

    @Test func connectsLazilyAndReusesConnections() throws {
        let pool = try makePool()
        #expect(pool.statistics.open == 0)
        let first = try pool.withConnection { $0.backendPID }
        let second = try pool.withConnection { $0.backendPID }
        #expect(first == second)
        #expect(pool.statistics.open == 1)
        #expect(pool.statistics.inUse == 0)
        #expect(pool.ping())
    }

    @Test func anUnreachableServerDoesNotStopThePoolBeingMade() throws {
        let server = try PostgresServer()
        let url = server.url()
        try server.stop()
        let pool = PostgresPool(.init(url: url, size: 2))
        #expect(!pool.ping())
        let error = postgresError { try pool.withConnection { _ in } }
        #expect(error?.kind == .connection)
        #expect(error?.isUnavailable == true)
        #expect(pool.statistics.open == 0)
    }

    @Test func afterAFailedConnectTheNextOnesFailAtOnceUntilTheDelayHasPassed() throws {
        let server = try PostgresServer()
        let url = try server.makeDatabase()
        try server.stop()
        var configuration = PostgresPool.Configuration(url: url, size: 2)
        configuration.firstReconnectDelay = .seconds(3600)
        configuration.longestReconnectDelay = .seconds(3600)
        let pool = PostgresPool(configuration)
        let first = postgresError { try pool.withConnection { _ in } }
        #expect(first?.kind == .connection)
        #expect(first?.message.contains("not connecting for a moment") == false)
        try server.start()
        // The server is back, but the pool waits out its delay without trying.
        let second = postgresError { try pool.withConnection { _ in } }
        #expect(second?.kind == .connection)
        #expect(second?.message.contains("not connecting for a moment") == true)
        #expect(!pool.ping())
    }

    @Test func aFullPoolThrowsPoolExhaustedAfterTheAcquireTimeout() throws {
        let pool = try makePool(size: 1, acquireTimeout: .milliseconds(100))
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = TestThread {
            try pool.withConnection { _ in
                holding.signal()
                release.wait()
            }
        }
        holding.wait()
        let error = postgresError { try pool.withConnection { _ in } }
        #expect(error?.kind == .poolExhausted)
        #expect(error?.isUnavailable == true)
        #expect(pool.statistics.inUse == 1)
        release.signal()
        try holder.join()
        #expect(try pool.withConnection { try $0.scalar("SELECT 1", as: Int.self) } == 1)
        let statistics = pool.statistics
        #expect(statistics.exhausted == 1)
        #expect(statistics.waits >= 1)
        #expect(statistics.open == 1)
    }

    @Test func aWaiterGetsTheConnectionAnotherGivesBack() throws {
        let pool = try makePool(size: 1, acquireTimeout: .seconds(30))
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = TestThread {
            try pool.withConnection { _ in
                holding.signal()
                release.wait()
            }
        }
        holding.wait()
        let waiter = TestThread { try pool.withConnection { try $0.scalar("SELECT 5", as: Int.self) } }
        #expect(eventually { pool.statistics.waits == 1 })
        release.signal()
        try holder.join()
        #expect(try waiter.join() == 5)
        #expect(pool.statistics.exhausted == 0)
    }

    @Test func manyThreadsShareFewConnections() throws {
        let pool = try makePool(size: 3)
        try pool.withConnection { try $0.execute("CREATE TABLE t (n bigint)") }
        let threads = (0..<8).map { index in
            TestThread {
                for step in 0..<25 {
                    try pool.withConnection { try $0.run("INSERT INTO t VALUES ($1)", [.integer(Int64(index * 100 + step))]) }
                }
            }
        }
        for thread in threads { try thread.join() }
        #expect(try pool.withConnection { try $0.scalar("SELECT count(DISTINCT n) FROM t", as: Int.self) } == 200)
        #expect(pool.statistics.open <= 3)
        #expect(pool.statistics.inUse == 0)
    }

    @Test func aBrokenConnectionIsDiscarded() throws {
        let pool = try makePool()
        let url = try pool.withConnection { try $0.scalar("SELECT current_database()", as: String.self) ?? "" }
        let pid = try pool.withConnection { $0.backendPID }
        let killer = try PostgresConnection(url: try PostgresServer.shared().url(database: url))
        // Killed while idle in the pool: the pool notices when it hands it out.
        #expect(try killer.scalar("SELECT pg_terminate_backend($1::integer, 10000)", [.integer(Int64(pid))], as: Bool.self) == true)
        let next = try pool.withConnection { $0.backendPID }
        #expect(next != pid)
        // Killed while in use: the statement fails, the connection is not given back.
        let error = postgresError {
            try pool.withConnection { connection in
                _ = try killer.scalar("SELECT pg_terminate_backend($1::integer, 10000)", [.integer(Int64(connection.backendPID))], as: Bool.self)
                try connection.run("SELECT 1")
            }
        }
        #expect(error?.kind == .connection)
        #expect(pool.statistics.open == 0)
        #expect(try pool.withConnection { $0.backendPID } != next)
    }

    @Test func aTransactionLeftOpenIsRolledBack() throws {
        let pool = try makePool(size: 1)
        try pool.withConnection { connection in
            try connection.execute("CREATE TABLE t (n bigint)")
            try connection.execute("BEGIN")
            try connection.run("INSERT INTO t VALUES (1)")
        }
        #expect(try pool.withConnection { try $0.scalar("SELECT count(*) FROM t", as: Int.self) } == 0)
    }

    @Test func theStatementTimeoutAppliesToPooledConnections() throws {
        let pool = try makePool(statementTimeout: .milliseconds(50))
        let error = postgresError { try pool.withConnection { try $0.run("SELECT pg_sleep(30)") } }
        #expect(error?.kind == .timeout)
        #expect(error?.isUnavailable == true)
        #expect(pool.ping())
    }

    /// The server stopped under load: statements in flight and new acquisitions fail with
    /// `.connection` (never hang), and the pool recovers once the server is back.
    @Test func aStoppedServerFailsFastAndThePoolRecoversAfterStart() throws {
        let server = try PostgresServer()
        let url = try server.makeDatabase()
        let pool = PostgresPool(.init(url: url, size: 4, acquireTimeout: .seconds(30)))
        #expect(pool.ping())
        let sleeper = TestThread { () -> PostgresError? in
            postgresError { try pool.withConnection { try $0.run("SELECT pg_sleep(60)") } }
        }
        let observer = try PostgresConnection(url: url)
        #expect(try eventually(timeout: .seconds(30)) {
            try observer.scalar("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)'", as: Int.self) == 1
        })
        try server.stop()
        let inFlight = try sleeper.join()
        #expect(inFlight?.kind == .connection)
        #expect(postgresError { try observer.run("SELECT 1") }?.kind == .connection)
        for _ in 0..<3 {
            #expect(postgresError { try pool.withConnection { try $0.run("SELECT 1") } }?.kind == .connection)
        }
        #expect(!pool.ping())
        #expect(pool.statistics.inUse == 0)

        try server.start()
        #expect(eventually(timeout: .seconds(30), pollingEvery: .milliseconds(50)) { pool.ping() })
        #expect(try pool.withConnection { try $0.scalar("SELECT 6", as: Int.self) } == 6)
    }
}
