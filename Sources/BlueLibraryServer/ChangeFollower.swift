import Dispatch
import Essentials
import Foundation
import Library
import Storage
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
///   commit, from the feed like any other (``sink(_:)``): its subscribers get it at
///   once, and before the `state.changed` of the same request, as on SQLite.
/// - Each time, for every library that has a hub, it reads the changes after the last version
///   it published (`changes(after:)`, with the version, in one snapshot) and publishes them; a
///   hub without subscribers for `skipGrace` skips to the library's version instead
///   (``skip(_:hub:entry:to:)``: a stream that resumes from before it is filled from the feed). A
///   gap in the feed (pruned changes, or a library created again with its id, which continues
///   its versions without a change) is published as `library.replaced`, so a subscriber
///   reloads instead of missing something.
/// - The facades' own sinks (``sink(_:)``) then publish only what the feed does not
///   carry (`state.changed`), so nothing is published twice; they also relay it to the other
///   instances (`EventRelay`: PostgreSQL's `NOTIFY bluelibrary_events`), whose listeners publish
///   it to their hub of the library, if they have one.
/// - A `state.changed` (this instance's or relayed) names a version; it is published only once
///   the follower has published through that version, held until then: an event id never
///   comes before the versioned event of its version, so a client that resumes with
///   `Last-Event-ID` = a `state.changed`'s id has already got that version's own event.
/// - Passes are serialised per library, never across libraries, and a commit that finds a pass
///   of its library running leaves it to that pass (which then reads once more) instead of
///   waiting for it.
/// - A library found deleted is no longer read until a commit names it again (its own
///   notification, this instance's commit, a subscription), or a listing every
///   `deletedRecheckPasses` passes finds it made again.
///
/// Only a hub's versions from its start on are followed: a hub made by its first subscriber
/// starts at the version then, and what came before is the change feed's (`Last-Event-ID`
/// backfill in `EventRoutes`).
final class ChangeFollower: Service {
    let serviceName = "change-follower"
    let store: any AlbumStore
    let hubs: EventHubs
    let wakeup: (any CommitWakeup)?
    let relay: (any EventRelay)?
    let logger: JSONLogger
    let interval: Duration
    /// How long a hub must have had no subscriber before its feed is skipped (``skip(_:hub:entry:to:)``).
    let skipGrace: Duration
    /// Changes read per statement; a longer backlog takes several.
    static let batch = 256
    /// The most `state.changed` events held per library while its feed cannot be read (the
    /// oldest are dropped beyond it).
    static let maxHeld = 1000
    /// Every this many passes, libraries known deleted are looked for again (one listing).
    static let deletedRecheckPasses = 30

    /// What the follower knows of one library: its pass lock and what it published.
    final class Followed: Sendable {
        /// Held by a pass of this library (never by passes of other libraries).
        let pass = Mutex<Void>(())
        /// Set when a pass is asked for: the pass that holds `pass` reads once more.
        let again = Atomic<Bool>(false)
        let state = Mutex<FollowState>(FollowState())
    }

    struct FollowState {
        /// The newest version published (nil: the hub's start version).
        var published: Int64?
        /// `state.changed` events waiting for their version to be published, oldest first.
        var held: [HeldEvent] = []
        /// Found deleted: not read until named again.
        var deleted = false
        /// The hub `published` refers to (a library's hub is made again after it was removed:
        /// idle, or its library deleted; the new one starts at its own version).
        var hub: UInt64?

        /// The newest version published to `hub` (its start version when nothing was yet).
        mutating func published(to hub: EventHub) -> Int64 {
            if self.hub != hub.deliverySerial {
                self.hub = hub.deliverySerial
                published = nil
            }
            return published ?? hub.startVersion
        }
    }

    struct HeldEvent {
        let name: String
        let json: String
        let version: Int64
    }

    private let followed = Mutex<[LibraryID: Followed]>([:])
    /// The thread that catches up every followed library each `interval`, or when woken.
    private let poller: BackgroundLoop
    /// The thread that waits for other instances' commits and relayed events (with a wakeup).
    private let listener: BackgroundLoop
    private let passCount = Atomic<Int>(0)
    /// Whether the last pass failed (so an outage is logged once, and its end once).
    private let failing = Atomic<Bool>(false)

    init(store: any AlbumStore, hubs: EventHubs, wakeup: (any CommitWakeup)?, relay: (any EventRelay)? = nil, logger: JSONLogger,
         interval: Duration = .seconds(1), skipGrace: Duration = .seconds(10), clock: any MonotonicClock = SystemClock()) {
        self.skipGrace = skipGrace
        self.store = store
        self.hubs = hubs
        self.wakeup = wakeup
        self.relay = relay
        self.logger = logger
        self.interval = interval
        poller = BackgroundLoop(name: "change-follower", interval: interval, clock: clock)
        listener = BackgroundLoop(name: "commit-listener", interval: .zero)
    }

    /// What the follower keeps for `library` (made on first use).
    func followedEntry(_ library: LibraryID) -> Followed {
        followed.withLock { all in
            if let known = all[library] { return known }
            let made = Followed()
            all[library] = made
            return made
        }
    }

    /// The event sink of `library`'s facade: `state.changed` is published once its version is
    /// (held until then) and relayed; a versioned event makes the follower catch the library's
    /// hub up from the feed on this thread when the hub has subscribers (one read after the
    /// commit, unless a pass of the library is running: that one reads again), and wakes the
    /// follower's thread otherwise.
    func sink(_ library: LibraryID) -> any LibraryEventSink {
        OwnCommits(follower: self, library: library)
    }

    struct OwnCommits: LibraryEventSink {
        let follower: ChangeFollower
        let library: LibraryID

        func publish(_ event: LibraryEvent) {
            if case .stateChanged = event {
                let json = EventHub.payload(of: event)
                // A hub made by this event starts at its version (nothing before it to wait for).
                let hub = follower.hubs.hub(library) { event.version }
                follower.publishState(library, hub: hub, name: event.name, json: json, version: event.version)
                follower.relay?.relay(RelayedEvent(
                    instance: follower.relay?.instance ?? "", library: library.rawValue, name: event.name, version: event.version,
                    json: json))
                return
            }
            follower.revive(library)
            if let hub = follower.hubs.existing(library), hub.subscriberCount > 0 {
                follower.catchUp(library, hub: hub)
            } else {
                // Nobody listens now: the follower's thread keeps the hub's ring up to date (or
                // skips it: ``skip(_:hub:entry:to:)``) without holding up the request.
                follower.wake()
            }
        }
    }

    /// Publishes an event that refers to `version` without being in the feed (`state.changed`)
    /// once `hub` has that version's own events: at once when it has, held otherwise (and the
    /// follower woken), published by the pass that publishes the version.
    func publishState(_ library: LibraryID, hub: EventHub, name: String, json: String, version: Int64) {
        let entry = followedEntry(library)
        let waiting = entry.state.withLock { state -> Bool in
            if version <= state.published(to: hub) {
                hub.publish(name: name, json: json, version: version, advances: false)
                return false
            }
            state.held.append(HeldEvent(name: name, json: json, version: version))
            if state.held.count > Self.maxHeld { state.held.removeFirst(state.held.count - Self.maxHeld) }
            return true
        }
        if waiting {
            revive(library)
            wake()
        }
    }

    /// Publishes the held events of versions up to `version` (under the library's state lock).
    private static func release(_ state: inout FollowState, through version: Int64, to hub: EventHub) {
        guard let first = state.held.first, first.version <= version else { return }
        let ready = state.held.prefix { $0.version <= version }
        for event in ready { hub.publish(name: event.name, json: event.json, version: event.version, advances: false) }
        state.held.removeFirst(ready.count)
    }

    /// Forgets that `library` was found deleted (a commit or an event names it again).
    func revive(_ library: LibraryID) {
        guard let known = followed.withLock({ $0[library] }) else { return }
        known.state.withLock { $0.deleted = false }
    }

    // MARK: - Running

    func start() {
        poller.start { [self] in { self.catchUp() } }
        if let wakeup {
            // No pause between passes: each one waits in `wakeup` (up to `interval`).
            listener.start { [self] in
                {
                    let woken = wakeup.wait(upTo: self.interval)
                    for name in woken.libraries { self.revive(LibraryID(rawValue: name)) }
                    if woken.committed { self.wake() }
                    self.publishRelayed(woken.events)
                }
            }
        }
    }

    /// Publishes the events other instances relayed to this process's hub of their library
    /// (none: nobody here listens to it), each once its version is published here (see
    /// ``publishState(_:hub:name:json:version:)``); this instance's own are skipped.
    func publishRelayed(_ events: [RelayedEvent]) {
        for event in events where event.instance != relay?.instance {
            let library = LibraryID(rawValue: event.library)
            guard let hub = hubs.existing(library) else { continue }
            publishState(library, hub: hub, name: event.name, json: event.json, version: event.version)
        }
    }

    /// Asks for a catch-up pass soon (several asks before it runs make one pass).
    func wake() { poller.wake() }

    /// Stops the threads (a pass in progress finishes first; the listener's wait is cut short).
    func stop() {
        wakeup?.close()
        listener.stop()
        poller.stop()
    }

    // MARK: - Catching up

    /// One pass over every library with a hub that is not known deleted. Called by the
    /// thread; tests and requests may call it too.
    ///
    /// The versions of every followed library are read first in one statement, so a pass in
    /// which nothing changed (most polls) costs that statement alone; only libraries whose
    /// version moved are read further. (When one of them was deleted, that statement fails;
    /// the libraries that exist are then listed, in one more, the others are marked deleted
    /// and no longer read.) Every `deletedRecheckPasses` passes the deleted ones are looked
    /// for in a listing, in case another instance made one again.
    func catchUp() {
        let all = hubs.allByLibrary.sorted { $0.0 < $1.0 }
        guard !all.isEmpty else { return }
        let entries = all.map { (library: $0.0, hub: $0.1, entry: followedEntry($0.0)) }
        let recheck = passCount.wrappingAdd(1, ordering: .relaxed).newValue % Self.deletedRecheckPasses == 0
        var live = entries.filter { !$0.entry.state.withLock { $0.deleted } }
        if recheck, live.count < entries.count, let existing = try? Set(store.libraries().map(\.id)) {
            for item in entries where existing.contains(item.library) { item.entry.state.withLock { $0.deleted = false } }
            live = entries.filter { existing.contains($0.library) }
        }
        guard !live.isEmpty else { return }
        var current = try? store.versions(of: live.map(\.library))
        if current == nil, let existing = try? Set(store.libraries().map(\.id)) {
            for item in live where !existing.contains(item.library) { markDeleted(item.library, item.entry) }
            live = live.filter { existing.contains($0.library) }
            guard !live.isEmpty else { return }
            current = try? store.versions(of: live.map(\.library))
        }
        for (index, item) in live.enumerated() {
            let known = item.entry.state.withLock { $0.published(to: item.hub) }
            if let current, current[index] == known { continue }
            if let current, skip(item.library, hub: item.hub, entry: item.entry, to: current[index]) { continue }
            catchUp(item.library, hub: item.hub)
        }
    }

    /// A hub nobody listens to here jumps to `version` instead of reading the feed up to it
    /// (``EventHub/skipWhileUnsubscribed(to:after:)``): every instance would otherwise read every
    /// other instance's commits. The `state.changed` events held for those versions go with
    /// them (they are in no feed, and nobody was there to get them). Under the library's pass
    /// lock, so no pass publishes behind the jump; false (read the feed) when a pass holds it
    /// or a subscriber came.
    private func skip(_ library: LibraryID, hub: EventHub, entry: Followed, to version: Int64) -> Bool {
        let skipped: Bool? = entry.pass.withLockIfAvailable { _ in
            // The follow state's lock first, then the hub's, as a published state event takes them.
            entry.state.withLock { state -> Bool in
                guard hub.skipWhileUnsubscribed(to: version, after: skipGrace) else { return false }
                _ = state.published(to: hub)
                state.published = version
                state.held.removeAll { $0.version <= version }
                return true
            }
        }
        guard skipped == true else { return false }
        // A commit that asked for a pass while this held the lock left it to this one.
        if entry.again.load(ordering: .sequentiallyConsistent) { catchUp(library, hub: hub) }
        return true
    }

    /// The library is gone (this instance or another deleted it): its hub's streams end.
    private func markDeleted(_ library: LibraryID, _ entry: Followed) {
        entry.state.withLock { state in
            state.deleted = true
            state.held = []
        }
        hubs.libraryDeleted(library)
    }

    /// Whether `library` is known deleted (no longer read).
    func isKnownDeleted(_ library: LibraryID) -> Bool {
        followed.withLock { $0[library] }?.state.withLock { $0.deleted } ?? false
    }

    /// Publishes what `library`'s feed holds beyond what `hub` has from this follower.
    /// - Parameter waiting: wait for a pass of the library that is running, so the hub is up to
    ///   date on return (a subscription that resumes); otherwise (a commit, the thread) leave
    ///   the read to that pass, which reads once more.
    func catchUp(_ library: LibraryID, hub: EventHub, waiting: Bool = false) {
        let entry = followedEntry(library)
        entry.again.store(true, ordering: .sequentiallyConsistent)
        if waiting {
            entry.pass.withLock { _ in
                while entry.again.exchange(false, ordering: .sequentiallyConsistent) { pass(library, hub: hub, entry: entry) }
            }
            return
        }
        // The holder of `pass` looks at `again` after letting go of it, so an ask that finds it
        // held is never lost.
        while entry.again.load(ordering: .sequentiallyConsistent) {
            let ran: Void? = entry.pass.withLockIfAvailable { _ in
                while entry.again.exchange(false, ordering: .sequentiallyConsistent) { pass(library, hub: hub, entry: entry) }
            }
            if ran == nil { return }
        }
    }

    /// One read of the feed after what was published, to its end, published with the held
    /// events of each version right after it. Runs holding the library's pass lock.
    private func pass(_ library: LibraryID, hub: EventHub, entry: Followed) {
        do {
            var after = entry.state.withLock { $0.published(to: hub) }
            while true {
                let (version, changes) = try store.read(library) { reader in
                    (try reader.version(), try reader.changes(after: after, limit: Self.batch))
                }
                var through = after
                entry.state.withLock { state in
                    for change in changes {
                        if change.version > through + 1 {
                            // Versions without a change: pruned, or the id's library made again.
                            hub.publish(.libraryReplaced(version: change.version - 1))
                            Self.release(&state, through: change.version - 1, to: hub)
                        }
                        if let event = LibraryEvent(change) { hub.publish(event) }
                        through = change.version
                        Self.release(&state, through: through, to: hub)
                    }
                    if changes.count < Self.batch, version > through {
                        hub.publish(.libraryReplaced(version: version))
                        through = version
                        Self.release(&state, through: through, to: hub)
                    }
                    // Kept per batch: a later batch that fails never has this one published twice.
                    state.published = through
                    state.deleted = false
                }
                after = through
                if changes.count < Self.batch { break }
            }
            if failing.exchange(false, ordering: .relaxed) {
                logger.log(.info, "change feed readable again: events resume")
            }
        } catch let error as LibraryError where error == .libraryNotFound(library) {
            // Deleted: nothing to follow until a library is made with its id again.
            markDeleted(library, entry)
        } catch {
            if !failing.exchange(true, ordering: .relaxed) {
                logger.log(.warning, "cannot read the change feed: events wait until it can be read",
                           [("library", .string(library.rawValue)), ("error", .string(String(describing: error)))])
            }
        }
    }
}
