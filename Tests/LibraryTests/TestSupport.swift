import Foundation
import Synchronization
import Testing
@testable import Library

/// A clock that moves only when told to, so timestamps and ids are predictable.
final class ManualClock: Sendable {
    private let current: Mutex<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        current = Mutex(start)
    }

    var now: Date { current.withLock { $0 } }

    func advance(milliseconds: Int64) {
        current.withLock { $0 = $0.addingTimeInterval(Double(milliseconds) / 1000) }
    }
}

/// Records published events in order.
final class RecordingEventSink: LibraryEventSink {
    private let recorded = Mutex<[LibraryEvent]>([])

    var events: [LibraryEvent] { recorded.withLock { $0 } }

    func publish(_ event: LibraryEvent) {
        recorded.withLock { $0.append(event) }
    }
}

/// A facade over a fresh in-memory store, with handles on its collaborators.
struct Fixture {
    let store = InMemoryAlbumStore()
    let clock = ManualClock()
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

/// A valid input with the given title.
func input(_ title: String, artist: String = "Artist", year: Int? = nil) -> AlbumInput {
    try! AlbumInput(title: title, artist: artist, year: year)
}

/// UTF-8 bytes of a JSON literal.
func bytes(_ json: String) -> [UInt8] {
    Array(json.utf8)
}

/// The error a throwing call produced, for `#expect` on its value.
/// Any other error is recorded as a test issue.
func libraryError(_ body: () throws -> Void) -> LibraryError? {
    do {
        try body()
        return nil
    } catch let error as LibraryError {
        return error
    } catch {
        Issue.record("expected a LibraryError, got \(error)")
        return nil
    }
}

/// The field errors of a `.invalid` error (empty for any other outcome).
func fieldErrors(_ body: () throws -> Void) -> [FieldError] {
    guard case .invalid(let failure)? = libraryError(body) else { return [] }
    return failure.errors
}
