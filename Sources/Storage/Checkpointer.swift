import CLinux
import Dispatch
import Essentials
import Foundation
import SQLite
import Synchronization

/// Copies the WAL back into the database file on a background thread, so no committing
/// request pays for it.
///
/// SQLite's default (`wal_autocheckpoint`) runs a checkpoint inside the commit that pushes the
/// WAL past 1000 pages, including an fsync of the database file: measured at 1M albums, that
/// made the slowest 1% of single-album writes 0.5–0.8 ms and the slowest ones ~10 ms, against
/// ~0.2 ms with checkpoints moved here. This thread runs `PRAGMA wal_checkpoint(PASSIVE)` on
/// its own connection every `interval`, or sooner after `wakeAfterWrites` commits. A passive
/// checkpoint never blocks the writer or readers; a WAL that a long reader keeps alive is
/// picked up at a later tick.
///
/// The thread runs at nice 19. A checkpoint at 1M albums takes ~15 ms of copying and fsync; at
/// normal priority the thread, woken by a commit, preempted the request that had just
/// committed, which put the slowest 1% of `DELETE /albums/at/0` over 2 ms on a server pinned to
/// one core (p99 1.6-2.4 ms; 0.9-1.3 ms at nice 19, scripts/bench). SCHED_IDLE gave 0.7 ms but
/// can starve the thread for seconds on a saturated CPU while it holds the checkpoint lock;
/// nice 19 still gets a small share. The writer restarts the WAL itself after a
/// commit that leaves it past `fallbackFrames` (four times `resetFrames` by default), for a CPU
/// so busy that this thread falls behind.
///
/// `stop()` (called from the store's `deinit`) ends the thread and waits for it, so the
/// writer connection is the last one closed and SQLite folds and removes the WAL then.
final class Checkpointer: Sendable {
    private let loop: BackgroundLoop
    private let writesSinceWake = Atomic<Int>(0)
    private let wakeAfterWrites: Int
    private let resetFrames: Int
    /// The thread's name, as `top -H` shows it.
    static let threadName = "bl-checkpoint"
    /// Starts the thread.
    init(path: String, options: Connection.Options, interval: Duration, wakeAfterWrites: Int, resetFrames: Int,
         fallbackFrames: Int = .max, walFrames: WALFrameCounter? = nil) {
        let resetFrames = max(1, resetFrames)
        self.wakeAfterWrites = max(1, wakeAfterWrites)
        self.resetFrames = resetFrames
        let progress = Progress()
        loop = BackgroundLoop(name: Self.threadName, interval: interval)
        self.progress = progress
        loop.start {
            // Best effort: where the call is refused the thread simply keeps its priority.
            _ = bl_make_calling_thread_nice()
            var connection: Connection?
            return {
                // Past `fallbackFrames` the writers restart the WAL themselves; a copy started here
                // at nice 19 on a saturated CPU would only hold the checkpoint lock they need.
                if let walFrames, walFrames.frames >= fallbackFrames { return }
                do {
                    if connection == nil {
                        connection = try Connection(path: path, mode: .readWrite, options: options)
                    }
                    // Copies what it can without blocking anyone (column 1: frames in the WAL).
                    let frames = try connection?.firstRow(SQL.passiveCheckpoint) { try $0.int(1) } ?? 0
                    progress.checkpoints.add(1, ordering: .relaxed)
                    // A passive checkpoint alone never restarts the WAL under a steady load: a
                    // commit lands while it copies, or a reader of an older snapshot is still
                    // open when the next commit would restart it. Past `resetFrames`, the next
                    // writer restarts it on purpose; it has only the few frames committed since
                    // to copy. (Not this thread: at nice 19 it could be starved while holding the
                    // writer lock.)
                    if frames >= resetFrames {
                        progress.restartWanted.store(true, ordering: .relaxed)
                    }
                } catch {
                    // Busy or I/O trouble: drop the connection and try again at the next tick.
                    connection = nil
                }
            }
        }
    }

    /// What the loop's passes report, shared with the store.
    private final class Progress: Sendable {
        let checkpoints = Atomic<Int>(0)
        let restartWanted = Atomic<Bool>(false)
    }

    private let progress: Progress

    /// Checkpoints that ran (for tests).
    var checkpointCount: Int { progress.checkpoints.load(ordering: .relaxed) }

    /// Set when a checkpoint found at least `resetFrames` frames in the WAL: the next writer
    /// restarts it (see `SQLiteAlbumStore.didCommit`), then calls `restartDone()`.
    var restartWanted: Bool { progress.restartWanted.load(ordering: .relaxed) }

    func restartDone() { progress.restartWanted.store(false, ordering: .relaxed) }

    /// Counts a commit; wakes the thread every `wakeAfterWrites` commits, or as soon as the
    /// WAL holds `resetFrames` frames.
    func didCommit(walFrames: Int) {
        let due = writesSinceWake.add(1, ordering: .relaxed).newValue >= wakeAfterWrites
        if due || walFrames >= resetFrames {
            writesSinceWake.store(0, ordering: .relaxed)
            loop.wake()
        }
    }

    /// Ends the thread (closing its connection) and waits for it.
    func stop() { loop.stop() }
}
