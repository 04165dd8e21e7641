import Library
import Synchronization

/// One ``EventHub`` per library: each library has its own event stream
/// (`/libraries/{lib}/events`; `/events` is `default`'s), with its own versions as event ids.
///
/// Hubs are made on demand and kept for the life of the process (a deleted library's hub
/// stays: a library made again with the same id continues its versions, so its ids stay
/// meaningful). Where a hub's `Last-Event-ID` window starts:
/// - `default`: the library version at start (as before libraries existed);
/// - a hub made by its first subscriber: the library version then;
/// - a hub made by its library's first event: just before that event (nothing was published
///   for the library before it in this process, so nothing can have been missed).
final class EventHubs: Sendable {
    let configuration: EventHub.Configuration
    /// The hub of `default` (also the one server-wide events such as `settings.changed` and
    /// the cover events go to).
    let defaultHub: EventHub
    private let hubs: Mutex<[LibraryID: EventHub]>

    init(configuration: EventHub.Configuration, defaultVersion: Int64) {
        self.configuration = configuration
        defaultHub = EventHub(configuration: configuration, version: defaultVersion)
        hubs = Mutex([.default: defaultHub])
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
        return hubs.withLock { hubs in
            if let known = hubs[library] { return known }
            let made = EventHub(configuration: configuration, version: start)
            hubs[library] = made
            return made
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

    /// Shuts every hub down (see ``EventHub/shutdown()``).
    func shutdown() {
        for hub in all { hub.shutdown() }
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
