import Dispatch
import Essentials
import Synchronization

/// A bounded pool of connections to one server, shared by threads.
///
/// - At most `size` connections exist; a thread that finds none free waits up to
///   `acquireTimeout`, then gets a `.poolExhausted` error (503 material, not a hang).
/// - Connections are opened lazily, on demand: creating a pool never touches the server, so an
///   unreachable server fails requests, not startup.
/// - A connection found broken after its holder's body (the server went away, the network
///   failed) is discarded with every idle one (they reached the same server), and so is an
///   idle one whose server closed it meanwhile (checked with a non-blocking look at its socket
///   when it is handed out).
/// - After a failed connect, new connects back off (by default 100 ms doubling up to 2 s); an acquisition
///   that would connect meanwhile fails at once with `.connection`, so a dead server costs
///   callers no connect timeouts.
/// - Each new connection gets the configured `statement_timeout`, and a response timeout: a
///   server that does not answer within it costs the caller a `.connection` error and the
///   connection, never an unbounded wait.
public final class PostgresPool: Sendable {
    public struct Configuration: Sendable {
        /// The server, as `postgresql://user@host:port/database`.
        public var url: String
        /// The password, given to libpq apart from the URL (nil: the URL's, or libpq's own sources).
        public var password: String?
        /// Most connections open at once.
        public var size: Int
        /// Longest wait for a free connection before `.poolExhausted`.
        public var acquireTimeout: Duration
        /// Longest wait for the server when opening a connection.
        public var connectTimeout: Duration
        /// Each connection's `statement_timeout` (nil: none): a longer statement fails with `.timeout`.
        public var statementTimeout: Duration?
        /// Each connection's ``PostgresConnection/responseTimeout``: the longest wait for the
        /// server's answer to one statement before the connection is closed and the statement
        /// fails with `.connection` (503 material), so a paused or partitioned server never
        /// holds a caller longer. Defaults to `statementTimeout` + 5 s (none without one).
        public var responseTimeout: Duration?
        /// The pause after a failed connect, doubled after each further failure up to
        /// `longestReconnectDelay`; acquisitions that would connect meanwhile fail at once.
        public var firstReconnectDelay: Duration = .milliseconds(100)
        public var longestReconnectDelay: Duration = .seconds(2)

        public init(
            url: String, size: Int = 10, acquireTimeout: Duration = .seconds(2), connectTimeout: Duration = .seconds(5),
            statementTimeout: Duration? = .seconds(30)
        ) {
            precondition(size > 0, "a pool needs room for one connection at least")
            self.url = url
            self.size = size
            self.acquireTimeout = acquireTimeout
            self.connectTimeout = connectTimeout
            self.statementTimeout = statementTimeout
            responseTimeout = statementTimeout.map { $0 + .seconds(5) }
        }
    }

    public let configuration: Configuration
    /// One permit per connection that may be handed out.
    private let slots: DispatchSemaphore
    private let state: Mutex<State>

    private struct State {
        var idle: [PooledConnection] = []
        var open = 0
        var inUse = 0
        var waits = 0
        var exhausted = 0
        var connectFailures = 0
        var nextConnectAt: ContinuousClock.Instant?
        var lastConnectError = ""
    }

    public init(_ configuration: Configuration) {
        self.configuration = configuration
        slots = DispatchSemaphore(value: configuration.size)
        state = Mutex(State())
    }

    /// Runs `body` with a connection of the pool, which goes back to the pool afterwards (or
    /// is discarded when broken). Throws `.poolExhausted` when none is free within the acquire
    /// timeout, `.connection` when a new one cannot be opened, or what `body` throws.
    ///
    /// `body` must leave no transaction open (one left open is rolled back) and must not keep
    /// the connection.
    @discardableResult
    public func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let pooled = try acquire()
        defer { release(pooled) }
        return try body(pooled.connection)
    }

    /// True when a connection of the pool answers `SELECT 1` (for readiness checks) within
    /// `responseTimeout` (or the pool's own, when shorter).
    public func ping(responseTimeout: Duration = .seconds(5)) -> Bool {
        let answer = try? withConnection { connection in
            let own = connection.responseTimeout
            defer { connection.responseTimeout = own }
            connection.responseTimeout = min(own ?? responseTimeout, responseTimeout)
            return try connection.scalar("SELECT 1", as: Int.self)
        }
        return answer == 1
    }

    /// Connections open (idle or in use), in use, acquisitions that had to wait, and those that
    /// waited in vain (`.poolExhausted`).
    public var statistics: (open: Int, inUse: Int, waits: Int, exhausted: Int) {
        state.withLock { ($0.open, $0.inUse, $0.waits, $0.exhausted) }
    }

    /// Closes the idle connections (those in use close when given back broken, or stay).
    public func closeIdleConnections() {
        let closing = state.withLock { state in
            let idle = state.idle
            state.open -= idle.count
            state.idle.removeAll()
            return idle
        }
        _ = closing  // deinit of the last reference closes each connection
    }

    // MARK: - Acquire and release

    private func acquire() throws -> PooledConnection {
        if slots.wait(timeout: .now()) != .success {
            state.withLock { $0.waits += 1 }
            guard slots.wait(timeout: .now(plus: configuration.acquireTimeout)) == .success else {
                state.withLock { $0.exhausted += 1 }
                throw PostgresError(
                    kind: .poolExhausted,
                    message: "no free connection within \(configuration.acquireTimeout) (pool of \(configuration.size))"
                )
            }
        }
        // Holding a permit: an idle connection, or room to open one.
        while let pooled = state.withLock({ state -> PooledConnection? in
            guard let pooled = state.idle.popLast() else { return nil }
            state.inUse += 1
            return pooled
        }) {
            if pooled.connection.isHealthyWhenIdle() { return pooled }
            state.withLock {
                $0.inUse -= 1
                $0.open -= 1
            }
        }
        do {
            return try connect()
        } catch {
            slots.signal()
            throw error
        }
    }

    /// Opens a connection, unless an earlier failure's backoff has not run out.
    private func connect() throws -> PooledConnection {
        let backingOff = state.withLock { state -> String? in
            if let next = state.nextConnectAt, ContinuousClock.now < next {
                return state.lastConnectError
            }
            state.open += 1
            state.inUse += 1
            return nil
        }
        if let backingOff {
            throw PostgresError(kind: .connection, message: "not connecting for a moment after a failure: \(backingOff)")
        }
        do {
            let connection = try PostgresConnection(
                url: configuration.url, password: configuration.password, connectTimeout: configuration.connectTimeout, responseTimeout: configuration.responseTimeout)
            if let timeout = configuration.statementTimeout {
                try connection.setStatementTimeout(timeout)
            }
            state.withLock {
                $0.connectFailures = 0
                $0.nextConnectAt = nil
            }
            return PooledConnection(connection)
        } catch {
            state.withLock { state in
                state.open -= 1
                state.inUse -= 1
                state.connectFailures += 1
                let pause = Backoff(first: configuration.firstReconnectDelay, longest: configuration.longestReconnectDelay)
                    .delay(afterFailures: state.connectFailures)
                state.nextConnectAt = ContinuousClock.now + pause
                state.lastConnectError = (error as? PostgresError)?.message ?? "\(error)"
            }
            throw error
        }
    }

    private func release(_ pooled: PooledConnection) {
        let connection = pooled.connection
        // Never sent to the next user's statements (a body that returned with some queued).
        connection.discardQueued()
        if !connection.isBroken && connection.isInTransaction {
            try? connection.execute("ROLLBACK")
        }
        let keep = !connection.isBroken && !connection.isInTransaction
        let dropped = state.withLock { state -> [PooledConnection] in
            state.inUse -= 1
            if keep {
                state.idle.append(pooled)
                return []
            }
            state.open -= 1
            // A connection lost to its server: the idle ones reached the same server (one that
            // went away, or a primary a failover demoted), so they go too rather than fail the
            // next request each; new ones connect to whichever host the URL finds now.
            guard connection.isDisconnected else { return [] }
            let idle = state.idle
            state.idle.removeAll()
            state.open -= idle.count
            return idle
        }
        _ = dropped  // closed here, outside the lock, as the last reference goes
        slots.signal()
    }
}

/// A pool's connection: handed to one thread at a time (the pool's permits guarantee it), so
/// it may cross threads although `PostgresConnection` is not `Sendable`.
private final class PooledConnection: @unchecked Sendable {
    let connection: PostgresConnection

    init(_ connection: PostgresConnection) {
        self.connection = connection
    }
}
