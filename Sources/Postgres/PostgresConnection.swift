import CPostgres
import Essentials
#if canImport(Glibc)
import Glibc
#endif

/// One PostgreSQL connection. Owns its `PGconn` and closes it in `deinit`.
///
/// libpq connections must be used by one thread at a time, so this class is deliberately not
/// `Sendable`; share a server between threads through ``PostgresPool``.
///
/// Statements with parameters go through the extended protocol: each distinct SQL text (with
/// its parameter types) is prepared once per connection and reused (``preparedStatementCount``
/// tells how many were prepared). Results are read in text format; parameters are sent typed,
/// in binary (see ``PostgresValue``). No value is ever put into SQL text.
public final class PostgresConnection {
    let handle: OpaquePointer
    var statements: [StatementKey: String] = [:]
    private var nextStatementNumber = 0
    /// Set when the server did not answer in time and the connection was shut down.
    var isAbandoned = false
    /// Longest wait for the server's answer to one statement (for ``forEachRow``, for each
    /// next row), nil for none. When it passes, the connection is closed (it is broken from
    /// then on, and a pool discards it) and the statement throws a `.connection` error. Keep it
    /// above the session's `statement_timeout`, which ends slow statements on the server.
    public var responseTimeout: Duration?
    /// True while `forEachRow` reads a result: the connection takes no other statement then.
    var isStreaming = false
    /// Asked before and during each statement while ``stopping(when:_:)`` runs.
    var stop: StopCheck?
    /// Statements ``runLater(_:_:)`` queued, sent with the next statement (see
    /// `PostgresConnection+Pipeline`).
    var queued: [QueuedStatement] = []
    /// How many of the queued statements open a transaction that has not been sent yet (its
    /// `BEGIN`), nil when none is pending.
    var pendingBegin: Int?
    /// Moves each time the queue is taken (sent) or dropped: a savepoint tells by it whether its
    /// queued SAVEPOINT is still unsent.
    var queueGeneration = 0
    /// Round trips to the server so far: each send that then waits for answers (a statement, a
    /// script, a pipeline of queued statements) counts one.
    public internal(set) var roundTrips = 0
    /// Number of statements this connection has prepared; useful to verify statement reuse.
    public internal(set) var preparedStatementCount = 0
    /// Prepared statements kept per connection before all are deallocated (at a moment no
    /// transaction is open) and preparation starts over.
    public static let statementCacheCapacity = 512

    /// Connects to `url` (`postgresql://user@host:port/database?…`, or a libpq key=value
    /// string), waiting at most `connectTimeout` for the server. Throws a `.connection`
    /// ``PostgresError`` when the server cannot be reached or refuses the connection.
    /// `responseTimeout` bounds each later wait for the server (see ``responseTimeout``).
    ///
    /// Defaults the URL may override: `application_name=bluelibrary`, TCP keepalives after
    /// 10 s idle, every 5 s, 3 probes, and `tcp_user_timeout` of 25 s (sent data unacknowledged
    /// that long closes the connection), so a server host that vanished without closing the
    /// connection is noticed in about 25 s even by a LISTEN connection that waits quietly.
    /// The client encoding is always UTF8.
    ///
    /// `password`, when given, is handed to libpq as its own `password` parameter (after the
    /// URL, so it wins): any character works, `@`, `/` and `:` included, with no
    /// percent-encoding. Without it, the URL's password (percent-encoded), `PGPASSWORD` or a
    /// libpq password file (`PGPASSFILE`, `~/.pgpass`, `?passfile=`) apply as libpq says.
    public init(url: String, password: String? = nil, connectTimeout: Duration = .seconds(5), responseTimeout: Duration? = .seconds(60)) throws {
        guard let connection = Self.startConnecting(url, password: password) else {
            throw PostgresError(kind: .connection, message: "cannot allocate a connection")
        }
        do {
            try Self.finishConnecting(connection, timeout: connectTimeout)
            // libpq prints notices (and a server's goodbye to an idle connection) to stderr by
            // default; a library does not log: errors reach callers as thrown values.
            PQsetNoticeReceiver(connection, { _, _ in }, nil)
            // Statements are sent without blocking and awaited with poll() (see exchange).
            guard PQsetnonblocking(connection, 1) == 0 else {
                throw PostgresError(connection: connection, sql: nil)
            }
        } catch {
            PQfinish(connection)
            throw error
        }
        handle = connection
        self.responseTimeout = responseTimeout
    }

    deinit {
        PQfinish(handle)
    }

    /// `PQconnectStartParams` with our defaults first and `url` expanded after them (so the
    /// URL's own parameters win).
    private static func startConnecting(_ url: String, password: String?) -> OpaquePointer? {
        var settings = [
            ("application_name", "bluelibrary"), ("keepalives", "1"), ("keepalives_idle", "10"),
            ("keepalives_interval", "5"), ("keepalives_count", "3"), ("tcp_user_timeout", "25000"), ("dbname", url),
            // After the URL: never overridden (every text we exchange is UTF-8).
            ("client_encoding", "UTF8"),
        ]
        if let password { settings.append(("password", password)) }
        let keywords = settings.map { strdup($0.0) }
        let values = settings.map { strdup($0.1) }
        defer {
            for pointer in keywords + values { free(pointer) }
        }
        let keywordArray: [UnsafePointer<CChar>?] = keywords.map { UnsafePointer($0) } + [nil]
        let valueArray: [UnsafePointer<CChar>?] = values.map { UnsafePointer($0) } + [nil]
        return PQconnectStartParams(keywordArray, valueArray, 1)
    }

    /// Drives a started connection attempt with `PQconnectPoll`, waiting on the socket with
    /// `poll()` until `timeout` has passed.
    private static func finishConnecting(_ connection: OpaquePointer, timeout: Duration) throws {
        guard PQstatus(connection) != CONNECTION_BAD else {
            throw PostgresError(kind: .connection, message: trimmedMessage(PQerrorMessage(connection)) ?? "cannot connect")
        }
        let deadline = ContinuousClock.now + timeout
        // As the libpq documentation says: behave as if PQconnectPoll last returned WRITING.
        var state = PGRES_POLLING_WRITING
        while true {
            switch state {
            case PGRES_POLLING_OK:
                return
            case PGRES_POLLING_READING, PGRES_POLLING_WRITING:
                let events = Int16(state == PGRES_POLLING_READING ? POLLIN : POLLOUT)
                guard try waitForSocket(PQsocket(connection), events: events, until: deadline) else {
                    throw PostgresError(kind: .connection, message: "connecting timed out after \(timeout)")
                }
            default:
                throw PostgresError(kind: .connection, message: trimmedMessage(PQerrorMessage(connection)) ?? "cannot connect")
            }
            state = PQconnectPoll(connection)
        }
    }

    // MARK: - State

    /// True when the connection can no longer be used: the server closed it, the network
    /// failed, or it did not answer within ``responseTimeout``. A pool discards such a connection.
    public var isBroken: Bool { isAbandoned || isDisconnected }

    /// Whether libpq lost the connection to the server (not a connection given up here for a
    /// reason of its own, such as a pipeline left in an unknown state).
    public var isDisconnected: Bool { PQstatus(handle) != CONNECTION_OK }

    /// True between BEGIN and COMMIT/ROLLBACK (also when the transaction failed and awaits
    /// its ROLLBACK, and when its BEGIN is still queued).
    public var isInTransaction: Bool {
        if pendingBegin != nil { return true }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    /// True when the open transaction failed and ignores every statement but ROLLBACK.
    public var isInFailedTransaction: Bool { PQtransactionStatus(handle) == PQTRANS_INERROR }

    /// The server's process id for this connection (`pg_backend_pid()`).
    public var backendPID: Int32 { PQbackendPID(handle) }

    /// A statement name not used before on this connection.
    func nextStatementName() -> Int {
        nextStatementNumber += 1
        return nextStatementNumber
    }

    /// Number of statements currently held in the statement cache.
    public var cachedStatementCount: Int { statements.count }

    /// Sets this session's `statement_timeout` (nil or zero: none). A statement running longer
    /// fails with a `.timeout` error.
    public func setStatementTimeout(_ timeout: Duration?) throws {
        let milliseconds = timeout.map { $0 > .zero ? max(1, $0.milliseconds) : 0 } ?? 0
        _ = try scalar("SELECT set_config('statement_timeout', $1, false)", [.text("\(milliseconds)")], as: String.self)
    }

    // MARK: - Scripts

    /// Runs a script of one or more `;`-separated statements without parameters (schema
    /// creation, LISTEN, SET) with the simple query protocol. Rows, if any, are discarded.
    /// Statements queued by ``runLater(_:_:)`` go first, in the same round trip when `sql` is one
    /// statement.
    public func execute(_ sql: String) throws {
        if !queued.isEmpty && !sql.contains(";") {
            try sendQueued(then: .plain(sql))
        } else {
            try sendQueued(then: nil)
            let result = try exchangeOne(sql) { PQsendQuery(handle, sql) }
            try result.check([PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY], connection: handle, sql: sql)
        }
        // A script may have dropped this connection's prepared statements.
        let upper = sql.uppercased()
        if upper.contains("DEALLOCATE") || upper.contains("DISCARD") {
            statements.removeAll()
        }
    }

    /// Throws when the connection is in the middle of streaming rows (a statement run from
    /// inside a `forEachRow` body): libpq reads one result at a time.
    func requireIdle(_ sql: String) throws {
        guard !isStreaming else {
            throw PostgresError(kind: .other, message: "the connection is streaming rows (forEachRow); run other statements after it", sql: sql)
        }
    }
}

@available(*, unavailable)
extension PostgresConnection: Sendable {}

/// Waits until `fd` has one of `events` (POLLIN/POLLOUT) or `deadline` passes; false on the
/// deadline. Throws a `.connection` error when `poll` itself fails.
func waitForSocket(_ fd: Int32, events: Int16, until deadline: ContinuousClock.Instant) throws -> Bool {
    guard fd >= 0 else { throw PostgresError(kind: .connection, message: "the connection has no socket") }
    while true {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { return false }
        // Round up, so a sub-millisecond remainder still waits instead of spinning.
        let milliseconds = Int32(clamping: min(remaining.milliseconds + 1, Int64(Int32.max)))
        var descriptor = pollfd(fd: fd, events: events, revents: 0)
        let ready = poll(&descriptor, 1, milliseconds)
        if ready > 0 { return true }
        if ready < 0 && errno != EINTR {
            throw PostgresError(kind: .connection, message: "poll: \(String(cString: strerror(errno)))")
        }
    }
}

extension PostgresConnection {
    /// For a connection nobody used for a while: false when it is broken or its server closed
    /// it meanwhile. Reads (without blocking) whatever the server sent since, which for a
    /// healthy idle connection is nothing (or a notification, kept for `notifications`).
    func isHealthyWhenIdle() -> Bool {
        guard !isBroken, !isInTransaction else { return false }
        let fd = PQsocket(handle)
        // A closing server sends an error then end-of-file: read until nothing is left.
        for _ in 0..<4 {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 0) > 0 else { return !isBroken }
            guard PQconsumeInput(handle) == 1 else { return false }
        }
        return !isBroken
    }
}
