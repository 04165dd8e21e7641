import Essentials
import Foundation
import Storage
import Synchronization

/// Keeps the in-memory copies of stored state (settings, the token hash) in step with the
/// database when something else changed it, e.g. `bluelibrary token set` on a running server,
/// or another instance on the same PostgreSQL database: a thread of its own asks the backend's
/// signal (SQLite's `data_version`; PostgreSQL's `server_signals` generation) every `interval`
/// and, when it moved, has `reload` re-read what it keeps. So a settings change, a new token or
/// a lockout made anywhere applies here at the first poll after it whose reload works (within
/// `interval` while the database answers; a failed reload is tried again every poll until one
/// succeeds). Nothing on an event loop waits for it.
final class StoredStateWatcher: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)
    private let signal: any StoredStateSignal
    private let interval: Duration
    private let reload: @Sendable () throws -> Void
    private let logger: JSONLogger
    /// Whether the last reload failed: an outage of the database is logged once, and its end.
    private let failing = Atomic<Bool>(false)

    init(signal: any StoredStateSignal, interval: Duration, logger: JSONLogger, reload: @escaping @Sendable () throws -> Void) {
        self.signal = signal
        self.interval = interval
        self.logger = logger
        self.reload = reload
    }

    func start() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        startThread(named: "stored-state-watch") { [self] in run() }
    }

    private func run() {
        let seconds = interval.seconds
        // A change the signal reported whose reload failed: reloaded on every poll until one
        // succeeds (the signal has moved on and will not report it again).
        var owed = false
        while !stopped.load(ordering: .relaxed) {
            _ = wake.wait(timeout: .now() + seconds)
            if stopped.load(ordering: .relaxed) { break }
            // A failed look (the database away) reloads too: the next successful one may not
            // move, though a change happened while it was away.
            let changed = (try? signal.hasChanged()) ?? true
            if changed || owed { owed = !reloadOnce() }
        }
        done.signal()
    }

    /// One reload (true when it worked); a failure is logged when it starts a run of failures,
    /// and the first success after one (so a database that is away for a while logs two lines,
    /// not one a second).
    private func reloadOnce() -> Bool {
        do {
            try reload()
            if failing.exchange(false, ordering: .relaxed) {
                logger.log(.info, "settings, token and lockouts re-read again")
            }
            return true
        } catch {
            if !failing.exchange(true, ordering: .relaxed) {
                logger.log(.error, "could not re-read the settings, token and lockouts; retrying every poll",
                           [("error", .string(String(describing: error)))])
            }
            return false
        }
    }

    /// Stops the thread and waits for it (a reload in progress finishes first).
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        wake.signal()
        if started.load(ordering: .relaxed) { done.wait() }
    }
}
