import CSQLite
import Synchronization

/// The number of frames in the write-ahead log after the latest commit of the connection it
/// is installed on (``Database/installWALFrameCounter()``), kept by SQLite's WAL hook.
///
/// Installing it replaces SQLite's automatic checkpoint (which is itself a WAL hook): whoever
/// installs it takes over checkpointing.
public final class WALFrameCounter: Sendable {
    private let value = Atomic<Int>(0)

    public init() {}

    /// Frames in the WAL as of the latest commit (0 before the first one).
    public var frames: Int { value.load(ordering: .relaxed) }

    fileprivate func store(_ frames: Int32) {
        value.store(Int(frames), ordering: .relaxed)
    }
}

extension Connection {
    /// Keeps `counter` up to date after every commit of this connection (see ``WALFrameCounter``).
    /// The connection holds `counter` for as long as it is open.
    func installWALHook(_ counter: WALFrameCounter) {
        walFrameCounter = counter
        let context = Unmanaged.passUnretained(counter).toOpaque()
        // Returns the previous hook's context (SQLite's autocheckpoint), which is not ours to free.
        _ = sqlite3_wal_hook(handle, { context, _, _, frames in
            guard let context else { return SQLITE_OK }
            Unmanaged<WALFrameCounter>.fromOpaque(context).takeUnretainedValue().store(frames)
            return SQLITE_OK
        }, context)
    }
}
