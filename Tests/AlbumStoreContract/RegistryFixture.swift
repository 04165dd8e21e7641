import Foundation
import Library
import Synchronization

/// A `Libraries` registry over fresh stores from `factory`, with one recording sink per library.
public struct RegistryFixture {
    public let stores: StoreUnderTest
    public let clock = ManualDateClock()
    public let libraries: Libraries
    private let sinks: SinkDirectory

    public var store: any AlbumStore { stores.albums }

    /// - Parameter libraries: created (empty) besides `default`, names = ids.
    public init(_ factory: AlbumStoreFactory, undoLimit: Int = 100, libraries extra: [String] = []) throws {
        stores = try factory()
        let clock = clock
        let sinks = SinkDirectory()
        self.sinks = sinks
        libraries = Libraries(
            store: stores.albums, clock: { clock.now }, ids: .random(clock: { clock.now }), undoLimit: undoLimit,
            events: { sinks.sink($0) })
        for id in extra { _ = try libraries.create(id: id) }
    }

    /// A second registry over the same stores (a restarted server): new facades, new memos,
    /// the same sinks.
    public func restarted() -> Libraries {
        let clock = clock
        let sinks = sinks
        return Libraries(store: store, clock: { clock.now }, ids: .random(clock: { clock.now }), events: { sinks.sink($0) })
    }

    /// The sink of library `id` (every facade made for it publishes there).
    public func sink(_ id: LibraryID) -> RecordingEventSink { sinks.sink(id) }

    /// The facade of `id` (which must exist).
    public func facade(_ id: LibraryID) throws -> LibraryFacade { try libraries.facade(id) }

    /// The titles of library `id` in order.
    public func titles(_ id: LibraryID) throws -> [String] {
        try facade(id).page(PageRequest(limit: 500)).items.map(\.album.title)
    }

    /// Adds albums titled `titles` to library `id`, in order.
    @discardableResult
    public func add(_ titles: String..., to id: LibraryID) throws -> [Album] {
        let facade = try facade(id)
        return try titles.map { try facade.add(input($0)).album }
    }

    /// The version of `id` as stored (read from the store, not a facade memo).
    public func storedVersion(_ id: LibraryID) throws -> Int64 {
        try store.read(id) { try $0.version() }
    }
}

/// One recording sink per library id, made on first use.
final class SinkDirectory: Sendable {
    private let sinks = Mutex<[LibraryID: RecordingEventSink]>([:])

    func sink(_ id: LibraryID) -> RecordingEventSink {
        sinks.withLock { sinks in
            if let known = sinks[id] { return known }
            let made = RecordingEventSink()
            sinks[id] = made
            return made
        }
    }
}
