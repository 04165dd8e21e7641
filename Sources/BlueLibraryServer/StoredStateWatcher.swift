import Essentials
import Foundation
import Storage

/// Keeps the in-memory copies of stored state (settings, the token hash) in step with the
/// database when something else changed it, e.g. `bluelibrary token set` on a running server,
/// or another instance on the same PostgreSQL database: a thread of its own asks the backend's
/// signal (SQLite's `data_version`; PostgreSQL's `server_signals` generation) every `interval`
/// and, when it moved, has `reload` re-read what it keeps. So a settings change, a new token or
/// a lockout made anywhere applies here at the first poll after it whose reload works (within
/// `interval` while the database answers; a failed reload is tried again every poll until one
/// succeeds). Nothing on an event loop waits for it.
final class StoredStateWatcher: Service {
    let serviceName = "stored-state-watch"
    private let loop: BackgroundLoop
    private let signal: any StoredStateSignal
    private let logger: JSONLogger
    private let reload: @Sendable () throws -> Void

    init(signal: any StoredStateSignal, interval: Duration, clock: any MonotonicClock = SystemClock(), logger: JSONLogger,
         reload: @escaping @Sendable () throws -> Void) {
        loop = BackgroundLoop(name: serviceName, interval: interval, clock: clock)
        self.signal = signal
        self.logger = logger
        self.reload = reload
    }

    func start() {
        let (signal, logger, reload) = (signal, logger, reload)
        loop.start {
            // A change the signal reported whose reload failed: reloaded on every poll until one
            // succeeds (the signal has moved on and will not report it again).
            var owed = false
            // Whether the last reload failed: an outage of the database is logged once, and its end.
            var failing = false
            return {
                // A failed look (the database away) reloads too: the next successful one may not
                // move, though a change happened while it was away.
                let changed = (try? signal.hasChanged()) ?? true
                guard changed || owed else { return }
                owed = !Self.reloadOnce(reload, failing: &failing, logger: logger)
            }
        }
    }

    /// Stops the thread and waits for it (a reload in progress finishes first).
    func stop() { loop.stop() }

    /// One reload (true when it worked); a failure is logged when it starts a run of failures,
    /// and the first success after one (so a database that is away for a while logs two lines,
    /// not one a second).
    private static func reloadOnce(_ reload: () throws -> Void, failing: inout Bool, logger: JSONLogger) -> Bool {
        do {
            try reload()
            if failing {
                failing = false
                logger.log(.info, "settings, token and lockouts re-read again")
            }
            return true
        } catch {
            if !failing {
                failing = true
                logger.log(.error, "could not re-read the settings, token and lockouts; retrying every poll",
                           [("error", .string(String(describing: error)))])
            }
            return false
        }
    }
}
