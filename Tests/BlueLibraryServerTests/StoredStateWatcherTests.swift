import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import ServerRecords
import Storage
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// The watcher that re-reads settings, the token and lockouts when another process changed them.
@Suite(.timeLimit(.minutes(1)), .ownThreads) struct StoredStateWatcherTests {
    /// A change is reported by the signal once; a reload that fails then (the database briefly
    /// away, a full pool) must be tried again at the next polls until one works, although the
    /// signal does not move again.
    @Test func aFailedReloadIsRetriedUntilOneSucceeds() throws {
        let store = try SQLiteAlbumStore(path: TestApp.temporaryDirectory() + "/bluelibrary.sqlite")
        let signal = DataVersionSignal(watch: try store.makeChangeWatch())
        let attempts = Atomic<Int>(0)
        let succeeded = Atomic<Bool>(false)
        let watcher = StoredStateWatcher(signal: signal, interval: .milliseconds(10), logger: JSONLogger(level: .error, sink: { _ in })) {
            if attempts.wrappingAdd(1, ordering: .relaxed).newValue == 1 {
                throw StoreUnavailable()
            }
            succeeded.store(true, ordering: .relaxed)
        }
        watcher.start()
        defer { watcher.stop() }
        // One commit by another connection: the signal moves once.
        _ = try store.updateFailedAttempts(client: "192.0.2.30") { _ in FailedAttempts(count: 1, windowStart: Date()) }
        #expect(eventually { succeeded.load(ordering: .relaxed) }, "the change was never re-read after the first reload failed")
        #expect(attempts.load(ordering: .relaxed) >= 2)
    }

    struct StoreUnavailable: Error {}
}
