import Essentials

extension Connection {
    /// How the database file is opened.
    public enum Mode: Sendable {
        /// Read-write; the file is created if missing.
        case readWriteCreate
        /// Read-write; the file must exist.
        case readWrite
        /// Read-only; the file must exist and already be in WAL mode.
        case readOnly
    }

    /// `PRAGMA synchronous` level. With WAL, `.normal` is durable against application crashes
    /// and only loses the last transactions on power loss; `.full` syncs every commit.
    public enum Synchronous: String, Sendable {
        case normal = "NORMAL"
        case full = "FULL"
    }

    /// Per-connection settings applied at open.
    public struct Options: Sendable {
        public var synchronous: Synchronous
        /// How long a statement waits on a locked database before failing with `SQLITE_BUSY`.
        public var busyTimeout: Duration
        /// Maximum number of cached prepared statements (the cache is flushed when full).
        public var statementCacheCapacity: Int

        public init(
            synchronous: Synchronous = .normal,
            busyTimeout: Duration = .seconds(5),
            statementCacheCapacity: Int = 64
        ) {
            self.synchronous = synchronous
            self.busyTimeout = busyTimeout
            self.statementCacheCapacity = statementCacheCapacity
        }
    }
}

extension Duration {
    /// Whole milliseconds, clamped to the `Int32` range SQLite accepts.
    var clampedMilliseconds: Int32 {
        Int32(clamping: milliseconds)
    }
}
