import Dispatch
import Essentials
import Library
import Synchronization

/// One ``EventHub`` per library: each library has its own event stream
/// (`/libraries/{lib}/events`; `/events` is `default`'s), with its own versions as event ids.
///
/// Hubs are made on demand and share the few threads of one ``EventDeliveryPool``
/// (`--event-threads`). A hub goes away:
/// - when its library is deleted (``libraryDeleted(_:)``): its streams end, their responses
///   complete (an `EventSource` reconnects and is told 404);
/// - when it has had no subscriber for `idleTimeout` (`--event-hub-idle`; looked at every
///   half of it, so it goes after between one and one and a half of it): its replay buffer is
///   freed. A library made again, or subscribed to again, gets a new hub starting at its
///   version then; a `Last-Event-ID` from before is filled from the change feed as for any
///   id older than a hub keeps. `default`'s hub stays.
///
/// Where a hub's `Last-Event-ID` window starts:
/// - `default`: the library version at start (as before libraries existed);
/// - a hub made by its first subscriber: the library version then;
/// - a hub made by its library's first event: just before that event (nothing was published
///   for the library before it in this process, so nothing can have been missed).
final class EventHubs: Sendable {
    let configuration: EventHub.Configuration
    /// The threads every hub's rounds run on.
    let pool: EventDeliveryPool
    /// How long a hub (not `default`'s) may be without subscribers before it is removed.
    let idleTimeout: Duration
    /// Where idleness is measured (tests advance a manual one instead of waiting).
    let clock: any MonotonicClock
    /// The hub of `default` (also the one server-wide events such as `settings.changed` and
    /// the cover events go to).
    let defaultHub: EventHub
    private let hubs: Mutex<[LibraryID: EventHub]>
    /// Looks for idle hubs every half `idleTimeout` while there are hubs besides `default`'s.
    private let sweeper: Sweeper

    /// Default `--event-threads`.
    static let defaultThreads = 2
    /// Default `--event-hub-idle`.
    static let defaultIdleTimeout = Duration.seconds(60)

    init(configuration: EventHub.Configuration, defaultVersion: Int64, threads: Int = EventHubs.defaultThreads,
         idleTimeout: Duration = EventHubs.defaultIdleTimeout, clock: any MonotonicClock = SystemClock()) {
        self.configuration = configuration
        let pool = EventDeliveryPool(threads: threads)
        self.pool = pool
        self.idleTimeout = idleTimeout
        self.clock = clock
        let defaultHub = EventHub(configuration: configuration, version: defaultVersion, pool: pool)
        self.defaultHub = defaultHub
        hubs = Mutex([.default: defaultHub])
        sweeper = Sweeper(interval: idleTimeout / 2)
        sweeper.hubs.withLock { $0 = WeakHubs(hubs: self) }
    }

    /// The hub of `library` if it has one (no lock but the registry's, no read).
    func existing(_ library: LibraryID) -> EventHub? {
        library == .default ? defaultHub : hubs.withLock { $0[library] }
    }

    /// The hub of `library`, made now when there is none, its window starting at `version()`
    /// (called only when the hub is made, outside the registry's lock).
    func hub(_ library: LibraryID, version: () throws -> Int64) rethrows -> EventHub {
        if let known = existing(library) { return known }
        let start = try version()
        let made = hubs.withLock { hubs -> EventHub in
            if let known = hubs[library] { return known }
            let made = EventHub(configuration: configuration, version: start, pool: pool, idleSince: clock.nanoseconds())
            hubs[library] = made
            return made
        }
        pool.schedule(sweeper, at: .now + sweeper.interval)
        return made
    }

    /// Hubs kept now (`default`'s included).
    var count: Int { hubs.withLock { $0.count } }

    /// `library` was deleted: its hub is removed and its streams end (see
    /// ``EventHub/libraryDeleted()``). Nothing happens for `default` or a library without a hub.
    func libraryDeleted(_ library: LibraryID) {
        guard library != .default, let hub = hubs.withLock({ $0.removeValue(forKey: library) }) else { return }
        hub.libraryDeleted()
    }

    /// Removes the hubs (not `default`'s) without a subscriber for `idleTimeout` or more;
    /// returns how many. The pool calls it every half `idleTimeout`; a hub without subscribers
    /// is marked idle the first time this finds it so.
    @discardableResult
    func reclaimIdle() -> Int {
        let now = clock.nanoseconds()
        let timeout = idleTimeout.nanoseconds
        let cutoff = now >= timeout ? now - timeout : 0
        return hubs.withLock { hubs -> Int in
            var removed = 0
            for (library, hub) in hubs where library != .default && hub.isIdle(since: cutoff, now: now) {
                // A subscription that found the hub just before goes to the library's hub then,
                // starting where this one ended.
                let latest = hub.window.latest
                guard hub.retire(successor: { [weak self] in self?.hub(library) { latest } }) else { continue }
                hubs[library] = nil
                removed += 1
            }
            return removed
        }
    }

    /// What `Libraries` gives each library's facade as its event sink.
    func sink(_ library: LibraryID) -> any LibraryEventSink {
        library == .default ? defaultHub : Forwarder(hubs: self, library: library)
    }

    /// Every hub made so far.
    var all: [EventHub] { hubs.withLock { Array($0.values) } }

    /// Every hub made so far with its library.
    var allByLibrary: [(LibraryID, EventHub)] { hubs.withLock { $0.map { ($0.key, $0.value) } } }

    /// Open event streams over every hub.
    var subscriberCount: Int { all.reduce(0) { $0 + $1.subscriberCount } }

    /// The fan-out of every hub, added up.
    var statistics: FanOutStatistics {
        all.reduce(into: FanOutStatistics()) { $0 += $1.statistics }
    }

    /// Shuts every hub down (see ``EventHub/shutdown()``), waiting up to 2 s in all for their
    /// last rounds, then stops the pool's threads.
    func shutdown() {
        let hubs = all
        let running = hubs.filter { $0.beginShutdown() }
        let deadline = DispatchTime.now() + .seconds(2)
        for hub in running { hub.awaitShutdown(until: deadline) }
        pool.stop()
    }

    /// The registry as the sweeper sees it (weakly: the registry owns the sweeper).
    struct WeakHubs: @unchecked Sendable {
        weak var hubs: EventHubs?
    }

    /// The pool's periodic look for idle hubs.
    final class Sweeper: ScheduledDelivery, Sendable {
        let deliverySerial = DeliverySerial.next()
        let interval: Duration
        let hubs = Mutex(WeakHubs())

        init(interval: Duration) {
            self.interval = max(interval, .milliseconds(10))
        }

        func runRound() -> ContinuousClock.Instant? {
            guard let registry = hubs.withLock({ $0.hubs }) else { return nil }
            registry.reclaimIdle()
            return registry.count > 1 ? .now + interval : nil
        }
    }

    /// A library's sink that makes its hub with the first event (a library nobody listens to
    /// and nothing changes costs no hub).
    struct Forwarder: LibraryEventSink {
        let hubs: EventHubs
        let library: LibraryID

        func publish(_ event: LibraryEvent) {
            // The window starts before this event when it bumps the version, at it otherwise.
            let start: Int64
            if case .stateChanged = event { start = event.version } else { start = event.version - 1 }
            hubs.hub(library) { start }.publish(event)
        }
    }
}
