import Essentials

/// `SQLITE_BUSY` is a database with no capacity for this work right now: ``Database/read(_:)``
/// found no reader connection free within its `readerTimeout` (every reader was held by other
/// reads), or another connection held a lock past `busyTimeout`. The same work may succeed in
/// a moment, so a server answers it 503 with `Retry-After`, never 500. Every other error is
/// not such a failure.
extension SQLiteError: UnavailableDependency {
    public var isUnavailable: Bool { isBusy }
    public var retryAfterSeconds: Int { 1 }
}
