import Essentials
import Foundation
import Library
import Storage
import Synchronization

/// The embedded default: one SQLite file in the data directory (`bluelibrary.sqlite`), one
/// server process writing it (other processes, such as `bluelibrary token set`, may write
/// settings and the token; the server notices through SQLite's `data_version`).
struct SQLiteBackend: StoreBackend {
    let store: SQLiteAlbumStore
    /// Held shared while the server runs, so that `bluelibrary restore` refuses to replace
    /// the database under it (and the server refuses to start during a restore).
    let lock: LockHolder

    var albums: any AlbumStore { store }
    var records: any ServerRecordStore { store }
    var location: String { store.path }
    var isShared: Bool { false }
    var isDiskFull: Bool { store.isDiskFull }
    func isDiskFull(_ error: any Error) -> Bool { SQLiteAlbumStore.isDiskFull(error) }
    var ping: (@Sendable () -> (any UnavailableDependency)?)? { nil }

    /// Opens (creating it if missing) the database in `directory`.
    init(directory: String, storage: SQLiteAlbumStore.Configuration = ServeConfiguration().sqliteStorage) throws {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw ConfigurationError("cannot create the data directory \(directory): \(error.localizedDescription)")
        }
        do {
            lock = LockHolder(try DataDirectoryLock(directory: directory, mode: .shared))
        } catch {
            throw ConfigurationError("\(error)")
        }
        store = try BlueLibraryApp.openStore(in: directory, storage: storage)
    }

    func makeStoredStateSignal() throws -> any StoredStateSignal {
        DataVersionSignal(watch: try store.makeChangeWatch())
    }

    func makeCommitWakeup() -> (any CommitWakeup)? { nil }
    func makeEventRelay() -> (any EventRelay)? { nil }

    func register(in metrics: Metrics) {
        metrics.sampled("bluelibrary_db_reader_waits_total",
                        help: "Database reads that found every reader connection busy and waited for one.",
                        kind: .counter) { [store] in store.readerPoolStatistics.waits }
        metrics.sampled("bluelibrary_db_reader_timeouts_total",
                        help: "Database reads that gave up waiting for a reader connection.", kind: .counter) { [store] in
            store.readerPoolStatistics.timeouts
        }
        metrics.sampled("bluelibrary_db_write_transactions_total",
                        help: "Write transactions the database writer committed (or rolled back as a whole).",
                        kind: .counter) { [store] in store.groupCommitStatistics.transactions }
        metrics.sampled("bluelibrary_db_writes_total",
                        help: "Writes those transactions carried (group commit: writes queued meanwhile share one transaction).",
                        kind: .counter) { [store] in store.groupCommitStatistics.jobs }
        metrics.sampled("bluelibrary_db_wal_bytes_total",
                        help: "Bytes the database writer appended to the write-ahead log.",
                        kind: .counter) { [store] in store.walBytesWritten }
    }

    func close(logger: JSONLogger) {
        do {
            // A short WAL makes the next start fast (it is read in full when the database opens).
            try store.checkpointAndTruncateWAL()
        } catch {
            logger.log(.warning, "could not checkpoint the database on shutdown", [("error", .string(String(describing: error)))])
        }
        lock.release()
    }
}

/// The data directory lock until ``release()`` (a stopped app may live on in a test process).
final class LockHolder: Sendable {
    private let held: Mutex<DataDirectoryLock?>
    init(_ lock: DataDirectoryLock) { held = Mutex(lock) }
    func release() { held.withLock { $0 = nil } }
}

extension ServeConfiguration {
    /// The SQLite store's settings this configuration asks for.
    var sqliteStorage: SQLiteAlbumStore.Configuration {
        var storage = SQLiteAlbumStore.Configuration()
        storage.diskReserveBytes = diskReserveBytes
        storage.durability = durability == .full ? .full : .normal
        storage.maxBatch = writeBatch
        storage.readerTimeout = readerWait
        return storage
    }
}
