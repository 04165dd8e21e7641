import CPostgres
#if canImport(Glibc)
import Glibc
#endif

/// Every statement goes out with a `PQsend…` call on a non-blocking connection and its answer
/// is awaited with `poll()` on the socket, never with libpq's blocking calls (`PQexec`,
/// `PQexecPrepared`, `PQprepare`), so a server that stops answering (paused, partitioned, its
/// host gone without closing the connection) costs a caller at most ``PostgresConnection/responseTimeout``.
extension PostgresConnection {
    /// Sends with `send` (a `PQsend…` call) and returns the results of the exchange, in order.
    /// Throws a `.connection` error when the server does not answer in time (the connection is
    /// then closed: see ``abandon(sql:)``) or the connection fails.
    func exchange(_ sql: String, send: () -> Int32) throws -> [PostgresResult] {
        try requireIdle(sql)
        try refuseIfStopped(sql)
        try dispatch(sql, send: send)
        var results: [PostgresResult] = []
        while let result = try nextResult(sql, deadline: responseDeadline()) {
            results.append(result)
            // Like PQexec: a lost connection yields its error, then nothing more.
            if PQstatus(handle) == CONNECTION_BAD { break }
        }
        return results
    }

    /// The one result `PQexec` would have returned: the first failed one, else the last one.
    func exchangeOne(_ sql: String, send: () -> Int32) throws -> PostgresResult {
        let results = try exchange(sql, send: send)
        let failed = results.first { result in
            let status = result.status
            return status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE
        }
        guard let result = failed ?? results.last else {
            throw PostgresError(kind: .other, message: "the server sent no result", sql: sql)
        }
        return result
    }

    /// Queues a statement with `send` and pushes it to the server, waiting for the socket to
    /// take it at most until the response deadline.
    func dispatch(_ sql: String, send: () -> Int32) throws {
        guard send() == 1 else { throw PostgresError(connection: handle, sql: sql) }
        roundTrips += 1
        let deadline = responseDeadline()
        while true {
            switch PQflush(handle) {
            case 0:
                return
            case 1:
                // The socket's buffer is full: the server must read (and we may have to read
                // what it sends meanwhile, or it stops reading).
                let ready = try waitForSocket(
                    PQsocket(handle), events: Int16(POLLIN | POLLOUT), until: deadline ?? .now + .seconds(3600))
                guard ready || deadline == nil else { throw abandon(sql: sql) }
                guard PQconsumeInput(handle) == 1 else { throw PostgresError(connection: handle, sql: sql) }
            default:
                throw PostgresError(connection: handle, sql: sql)
            }
        }
    }

    /// The next result of the statement in flight (nil after its last one), waiting for it at
    /// most until `deadline`.
    func nextResult(_ sql: String, deadline: ContinuousClock.Instant?) throws -> PostgresResult? {
        while PQisBusy(handle) == 1 {
            // A lost connection: PQgetResult reports it without waiting.
            guard PQstatus(handle) != CONNECTION_BAD else { break }
            let end = deadline ?? .now + .seconds(3600)
            // With a stop check, wait in short slices and ask it between them (see `stopping`).
            let slice = stop.map { _ in min(end, .now + Self.stopCheckInterval) } ?? end
            let ready = try waitForSocket(PQsocket(handle), events: Int16(POLLIN), until: slice)
            if !ready, slice < end {
                cancelIfStopped()
                continue
            }
            guard ready || deadline == nil else { throw abandon(sql: sql) }
            // On failure libpq marks the connection bad and queues an error result.
            guard PQconsumeInput(handle) == 1 else { break }
        }
        return PQgetResult(handle).map(PostgresResult.init)
    }

    /// When a wait for the server that starts now must end (nil: no limit).
    func responseDeadline() -> ContinuousClock.Instant? {
        responseTimeout.map { ContinuousClock.now + $0 }
    }

    /// Gives up on a server that did not answer in time: shuts the connection's socket down
    /// (the server's backend notices at its next read or write and ends; a `PQcancel` would
    /// itself wait on the same unresponsive server), so the connection is broken and a pool
    /// discards it. Returns the `.connection` error to throw (a 503 for the server).
    func abandon(sql: String) -> PostgresError {
        isAbandoned = true
        let fd = PQsocket(handle)
        if fd >= 0 { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        let limit = responseTimeout.map { " within \($0)" } ?? ""
        return PostgresError(
            kind: .connection, message: "the server did not answer\(limit); the connection was closed", sql: sql)
    }
}

// MARK: - Stopping a statement

/// What ``PostgresConnection/stopping(when:_:)`` installed: the question, whether it was
/// answered "stop" (a cancel request was then sent, or a statement refused), and when a cancel
/// request was last sent.
final class StopCheck {
    let shouldStop: () -> Bool
    var stopped = false
    var lastCancel: ContinuousClock.Instant?

    init(_ shouldStop: @escaping () -> Bool) {
        self.shouldStop = shouldStop
    }
}

extension PostgresConnection {
    /// How often a statement's wait for its answer asks the stop check.
    static let stopCheckInterval: Duration = .milliseconds(2)

    /// Runs `body` with `shouldStop` asked before each statement is sent and every 2 ms while
    /// one runs: when it says true, the running statement is cancelled on the server (libpq's
    /// `PQcancel`, a request over a connection of its own; the statement then fails with
    /// SQLSTATE 57014) and no further statement is sent. Once a stop happened, this throws a
    /// `.timeout` error (57014) whatever `body` did, so nothing half-read is returned.
    ///
    /// `shouldStop` runs on this thread: it must be quick (an atomic load, a clock read).
    /// Not nestable: an inner call replaces the outer check until it returns.
    public func stopping<T>(when shouldStop: @escaping () -> Bool, _ body: () throws -> T) throws -> T {
        let check = StopCheck(shouldStop)
        stop = check
        defer { stop = nil }
        let result = Result { try body() }
        if check.stopped {
            throw PostgresError(kind: .timeout, sqlState: "57014", message: "the statement was stopped by its stop check")
        }
        return try result.get()
    }

    /// Throws, sending nothing, when the stop check says stop.
    func refuseIfStopped(_ sql: String) throws {
        guard let stop, stop.stopped || stop.shouldStop() else { return }
        stop.stopped = true
        throw PostgresError(kind: .timeout, sqlState: "57014", message: "the statement was stopped by its stop check", sql: sql)
    }

    /// Sends the server a cancel request for the statement in flight when the stop check says
    /// stop, and again every `cancelInterval` while the statement's answer has not come: a
    /// request that reaches the backend before it has started the statement cancels nothing
    /// (under load the second look came that early, and the statement ran to its end), and one
    /// the server could not take is lost. `PQcancel` opens a connection of its own and waits for
    /// the server to take the request (it may block briefly: this runs on the thread that runs
    /// the statement).
    func cancelIfStopped() {
        guard let stop else { return }
        let now = ContinuousClock.now
        if stop.stopped {
            guard let last = stop.lastCancel, now - last >= Self.cancelInterval else { return }
        } else {
            guard stop.shouldStop() else { return }
            stop.stopped = true
        }
        stop.lastCancel = now
        guard let cancel = PQgetCancel(handle) else { return }
        defer { PQfreeCancel(cancel) }
        var message = [CChar](repeating: 0, count: 256)
        _ = PQcancel(cancel, &message, Int32(message.count))
    }

    /// How often a cancel request is sent again while a stopped statement runs on.
    static let cancelInterval: Duration = .milliseconds(250)
}
