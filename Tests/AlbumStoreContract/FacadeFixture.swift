@testable import BlueLibraryAPI
import Foundation
import Library
import Synchronization
import Testing

/// A clock of `Date`s that moves only when told to, so timestamps and ids are predictable.
/// (The facade takes a `() -> Date`; Essentials' `ManualClock` is the monotonic one.)
public final class ManualDateClock: Sendable {
    private let current: Mutex<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        current = Mutex(start)
    }

    public var now: Date { current.withLock { $0 } }

    public func advance(milliseconds: Int64) {
        current.withLock { $0 = $0.addingTimeInterval(Double(milliseconds) / 1000) }
    }
}

/// Records published events in order.
public final class RecordingEventSink: LibraryEventSink {
    private let recorded = Mutex<[LibraryEvent]>([])

    public init() {}

    public var events: [LibraryEvent] { recorded.withLock { $0 } }

    public func publish(_ event: LibraryEvent) {
        recorded.withLock { $0.append(event) }
    }
}

/// A facade over fresh stores from `factory`, with handles on its collaborators.
public struct FacadeFixture {
    public let stores: StoreUnderTest
    public let clock = ManualDateClock()
    public let sink = RecordingEventSink()
    public let facade: LibraryFacade

    public var store: any AlbumStore { stores.albums }

    public init(_ factory: AlbumStoreFactory, undoLimit: Int = 100, seeded: Bool = false) throws {
        stores = try factory()
        let clock = clock
        facade = LibraryFacade(
            store: stores.albums, clock: { clock.now }, ids: .random(clock: { clock.now }), undoLimit: undoLimit,
            events: sink)
        if seeded { try facade.seedIfEmpty() }
    }

    /// The titles of the library in order.
    public func titles() throws -> [String] {
        try facade.page(PageRequest(limit: 500)).items.map(\.album.title)
    }

    /// Every album as stored, in order (read from the store, not through the facade).
    public func storedAlbums() throws -> [Album] {
        try store.read(.default) { reader in
            var albums: [Album] = []
            try reader.forEachAlbum { albums.append($0) }
            return albums
        }
    }

    /// Every saved state as stored, ordered by client.
    public func storedStates() throws -> [SavedState] {
        try store.read(.default) { try $0.states() }
    }

    /// Adds albums titled `titles` in order (artist "Artist").
    @discardableResult
    public func add(_ titles: String...) throws -> [Album] {
        try titles.map { try facade.add(input($0)).album }
    }
}

/// A valid input with the given title.
public func input(_ title: String, artist: String = "Artist", year: Int? = nil) -> AlbumInput {
    try! AlbumInput(title: title, artist: artist, year: year)
}

/// UTF-8 bytes of a JSON literal.
public func bytes(_ json: String) -> [UInt8] {
    Array(json.utf8)
}

/// The error a throwing call produced, for `#expect` on its value: a refused request body
/// (`BodyError`, from the wire module) as the domain's refusal it is answered with. Any other
/// error is recorded as a test issue.
public func libraryError(_ body: () throws -> Void) -> LibraryError? {
    do {
        try body()
        return nil
    } catch let error as LibraryError {
        return error
    } catch let error as BodyError {
        return LibraryError(error)
    } catch {
        Issue.record("expected a LibraryError, got \(error)")
        return nil
    }
}

/// The field errors of a `.invalid` error (empty for any other outcome).
public func fieldErrors(_ body: () throws -> Void) -> [FieldError] {
    guard case .invalid(let failure)? = libraryError(body) else { return [] }
    return failure.errors
}
