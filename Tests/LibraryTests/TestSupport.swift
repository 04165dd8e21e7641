import AlbumStoreContract
import Foundation
import Testing
@testable import Library

/// A facade over a fresh in-memory store, with handles on its collaborators: for the rules
/// that look inside the store (`data()`, `failNextCommit()`, transaction counts). Rules that
/// hold for every store are in AlbumStoreContract's `FacadeRules` and run against each one.
struct Fixture {
    let store = InMemoryAlbumStore()
    let clock = ManualDateClock()
    let sink = RecordingEventSink()
    let facade: LibraryFacade

    init(undoLimit: Int = 100, seeded: Bool = false) throws {
        let clock = clock
        facade = LibraryFacade(
            store: store, clock: { clock.now }, ids: .random(clock: { clock.now }), undoLimit: undoLimit,
            events: sink)
        if seeded { try facade.seedIfEmpty() }
    }

    /// The titles of the library in order.
    func titles() throws -> [String] {
        try facade.page(PageRequest(limit: 500)).items.map(\.album.title)
    }

    /// Adds albums titled `titles` in order (artist "Artist").
    @discardableResult
    func add(_ titles: String...) throws -> [Album] {
        try titles.map { try facade.add(input($0)).album }
    }
}
