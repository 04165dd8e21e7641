import Dispatch
import Essentials
import Foundation
import Library
import Synchronization

/// Events on a database several instances share: every committed change, whichever instance
/// made it, is published to this process's event hubs from the change feed, in version order,
/// with the version as its id, so a subscriber sees the same stream on every instance and can
/// resume with `Last-Event-ID` on any of them.
///
/// How it runs (one thread per process):
/// - It is woken by a commit notification (`CommitWakeup`: PostgreSQL's
///   `LISTEN bluelibrary_commits`, waited for on a thread of its own), or by a poll every
///   `interval` (a safety net for a notification lost while the listening connection was down).
/// - A commit of this process is published by the committing thread itself, right after the
///   commit, from the feed like any other (``sink(_:publishing:)``): its subscribers get it at
///   once, and before the `state.changed` of the same request, as on SQLite.
/// - Each time, for every library that has a hub, it reads the changes after the last version
///   it published (`changes(after:)`, with the version, in one snapshot) and publishes them. A
///   gap in the feed (pruned changes, or a library created again with its id, which continues
///   its versions without a change) is published as `library.replaced`, so a subscriber
///   reloads instead of missing something.
/// - The facades' own sinks (``sink(_:publishing:)``) then publish only what the feed does not
///   carry (`state.changed`), so nothing is published twice; they also relay it to the other
///   instances (`EventRelay`: PostgreSQL's `NOTIFY bluelibrary_events`), whose listeners publish
///   it to their hub of the library, if they have one.
///
/// Only a hub's versions from its start on are followed: a hub made by its first subscriber
/// starts at the version then, and what came before is the change feed's (`Last-Event-ID`
/// backfill in `EventRoutes`).
final class ChangeFollower: Sendable {
    let store: any AlbumStore
    let hubs: EventHubs
    let wakeup: (any CommitWakeup)?
    let relay: (any EventRelay)?
    let logger: JSONLogger
    let interval: Duration
    /// Changes read per statement; a longer backlog takes several.
    static let batch = 256

    /// The newest version published per library (absent: the hub's start version).
    private let published = Mutex<[LibraryID: Int64]>([:])
    /// Held by a catch-up pass, so passes of the thread and of a request never interleave.
    private let passes = Mutex<Void>(())
    private let pending = Atomic<Bool>(false)
    private let wakeSignal = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    /// Whether the last pass failed (so an outage is logged once, and its end once).
    private let failing = Atomic<Bool>(false)

    init(store: any AlbumStore, hubs: EventHubs, wakeup: (any CommitWakeup)?, relay: (any EventRelay)? = nil, logger: JSONLogger,
         interval: Duration = .seconds(1)) {
        self.store = store
        self.hubs = hubs
        self.wakeup = wakeup
        self.relay = relay
        self.logger = logger
        self.interval = interval
    }

    /// The event sink of `library`'s facade: `state.changed` goes to `hubSink` at once (it is
    /// in no feed); a versioned event makes the follower catch the library's hub up from the
    /// feed on this thread when the hub has subscribers (one read after the commit), and wakes
    /// the follower's thread otherwise.
    func sink(_ library: LibraryID, publishing hubSink: any LibraryEventSink) -> any LibraryEventSink {
        OwnCommits(follower: self, library: library, hubSink: hubSink)
    }

    struct OwnCommits: LibraryEventSink {
        let follower: ChangeFollower
        let library: LibraryID
        let hubSink: any LibraryEventSink

        func publish(_ event: LibraryEvent) {
            if case .stateChanged = event {
                hubSink.publish(event)
                follower.relay?.relay(RelayedEvent(
                    instance: follower.relay?.instance ?? "", library: library.rawValue, name: event.name, version: event.version,
                    json: EventHub.payload(of: event)))
            } else if let hub = follower.hubs.existing(library), hub.subscriberCount > 0 {
                follower.catchUp(library, hub: hub)
            } else {
                // Nobody listens now: the follower's thread keeps the hub's ring up to date
                // without holding up the request.
                follower.wake()
            }
        }
    }

    // MARK: - Running

    func start() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        let thread = Thread { [self] in follow() }
        thread.name = "change-follower"
        thread.start()
        if let wakeup {
            let listener = Thread { [self] in
                while !stopped.load(ordering: .relaxed) {
                    let woken = wakeup.wait(upTo: interval)
                    if woken.committed { wake() }
                    publishRelayed(woken.events)
                }
            }
            listener.name = "commit-listener"
            listener.start()
        }
    }

    /// Publishes the events other instances relayed to this process's hub of their library
    /// (none: nobody here listens to it); this instance's own are skipped.
    func publishRelayed(_ events: [RelayedEvent]) {
        for event in events where event.instance != relay?.instance {
            hubs.existing(LibraryID(rawValue: event.library))?.publish(name: event.name, json: event.json, version: event.version, advances: false)
        }
    }

    /// Asks for a catch-up pass soon (several asks before it runs make one pass).
    func wake() {
        if !pending.exchange(true, ordering: .relaxed) { wakeSignal.signal() }
    }

    /// Stops the threads (a pass in progress finishes first).
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        wakeup?.close()
        wakeSignal.signal()
        if started.load(ordering: .relaxed) { _ = done.wait(timeout: .now() + .seconds(5)) }
    }

    private func follow() {
        let seconds = interval.seconds
        while !stopped.load(ordering: .relaxed) {
            _ = wakeSignal.wait(timeout: .now() + seconds)
            if stopped.load(ordering: .relaxed) { break }
            pending.store(false, ordering: .relaxed)
            catchUp()
        }
        done.signal()
    }

    // MARK: - Catching up

    /// One pass over every library with a hub. Called by the thread; tests and requests may
    /// call it too (passes are serialised).
    ///
    /// The versions of every followed library are read first in one statement, so a pass in
    /// which nothing changed (most polls) costs that statement alone; only libraries whose
    /// version moved are read further. (When one of them was deleted, that statement fails;
    /// the libraries that exist are then listed, in one more, and only they are followed.)
    func catchUp() {
        var followed = hubs.allByLibrary.sorted { $0.0 < $1.0 }
        guard !followed.isEmpty else { return }
        var current = try? store.versions(of: followed.map(\.0))
        if current == nil, let existing = try? Set(store.libraries().map(\.id)) {
            followed = followed.filter { existing.contains($0.0) }
            guard !followed.isEmpty else { return }
            current = try? store.versions(of: followed.map(\.0))
        }
        let known = published.withLock { $0 }
        for (index, (library, hub)) in followed.enumerated() {
            if let current, current[index] == (known[library] ?? hub.startVersion) { continue }
            catchUp(library, hub: hub)
        }
    }

    /// Publishes what `library`'s feed holds beyond what `hub` has from this follower.
    func catchUp(_ library: LibraryID, hub: EventHub) {
        passes.withLock { _ in
            do {
                var after = published.withLock { $0[library] } ?? hub.startVersion
                while true {
                    let (version, changes) = try store.read(library) { reader in
                        (try reader.version(), try reader.changes(after: after, limit: Self.batch))
                    }
                    for change in changes {
                        if change.version > after + 1 {
                            // Versions without a change: pruned, or the id's library made again.
                            hub.publish(.libraryReplaced(version: change.version - 1))
                        }
                        if let event = LibraryEvent(change) { hub.publish(event) }
                        after = change.version
                    }
                    if changes.count < Self.batch, version > after {
                        hub.publish(.libraryReplaced(version: version))
                        after = version
                    }
                    // Kept per batch: a later batch that fails never has this one published twice.
                    let through = after
                    published.withLock { $0[library] = through }
                    if changes.count < Self.batch { break }
                }
                if failing.exchange(false, ordering: .relaxed) {
                    logger.log(.info, "change feed readable again: events resume")
                }
            } catch let error as LibraryError where error == .libraryNotFound(library) {
                // Deleted: nothing to follow until a library is made with its id again.
            } catch {
                if !failing.exchange(true, ordering: .relaxed) {
                    logger.log(.warning, "cannot read the change feed: events wait until it can be read",
                               [("library", .string(library.rawValue)), ("error", .string(String(describing: error)))])
                }
            }
        }
    }
}
