import TestThreads
import Testing
@testable import BlueLibraryAPI
@testable import BlueLibraryServer
@testable import Library

/// The bodies of `POST /libraries`, `PATCH /libraries/{lib}` and `POST /albums/{id}/move`.
@Suite("Catalog and move request bodies", .ownThreads)
struct CatalogRequestTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    static func fields(_ body: () throws(LibraryError) -> Any) -> [String] {
        do {
            _ = try body()
            return []
        } catch {
            guard case .invalid(let failure) = error else { return ["not invalid: \(error)"] }
            return failure.errors.map(\.field)
        }
    }

    @Test func createTakesAnIdAndAnOptionalTrimmedName() throws {
        #expect(try LibraryCreateRequest.decode(json: Self.bytes(#"{"id": "road-trip-2026"}"#))
            == LibraryCreateRequest(id: LibraryID(rawValue: "road-trip-2026"), name: nil))
        #expect(try LibraryCreateRequest.decode(json: Self.bytes(#"{"id": "jazz", "name": "  Jazz "}"#)).name == "Jazz")
    }

    @Test func createReportsEveryBadFieldAtOnce() {
        #expect(Self.fields { () throws(LibraryError) in try LibraryCreateRequest.decode(json: Self.bytes(#"{"name": "x"}"#)) } == ["id"])
        #expect(Self.fields { () throws(LibraryError) in
            try LibraryCreateRequest.decode(json: Self.bytes(#"{"id": "Jazz", "name": " ", "version": 3}"#))
        }.sorted() == ["id", "name", "version"])
        #expect(Self.fields { () throws(LibraryError) in
            try LibraryCreateRequest.decode(json: Self.bytes(#"{"id": "\#(String(repeating: "a", count: 41))"}"#))
        } == ["id"])
        #expect(Self.fields { () throws(LibraryError) in try LibraryCreateRequest.decode(json: Self.bytes(#"{"id": 7}"#)) } == ["id"])
    }

    /// `null` is refused where the spec does not list it (the name was taken as
    /// absent, the move's library too), naming the field.
    @Test func nullIsRefusedNamingTheField() {
        #expect(Self.fields { () throws(LibraryError) in try LibraryCreateRequest.decode(json: Self.bytes(#"{"id": "jazz", "name": null}"#)) } == ["name"])
        #expect(Self.fields { () throws(LibraryError) in try LibraryRenameRequest.decode(json: Self.bytes(#"{"name": null}"#)) } == ["name"])
        #expect(Self.fields { () throws(LibraryError) in try MoveRequest.decode(json: Self.bytes(#"{"index": 0, "library": null}"#)) } == ["library"])
        #expect(Self.fields { () throws(LibraryError) in try MoveRequest.decode(json: Self.bytes(#"{"index": null, "library": "jazz"}"#)) } == ["index"])
    }

    /// A move's index is a whole number from 0 to 2147483647; an integral number
    /// written `1.0` is 1, a fraction or a number past the range is refused naming the range.
    @Test func moveIndexHasOneRange() throws {
        #expect(try MoveRequest.decode(json: Self.bytes(#"{"index": 1.0}"#)).index == 1)
        #expect(try MoveRequest.decode(json: Self.bytes(#"{"index": 2147483647}"#)).index == 2147483647)
        for bad in ["1.5", "2147483648", "1000000000000000000", "1e300", "\"1\"", "true"] {
            do {
                _ = try MoveRequest.decode(json: Self.bytes(#"{"index": \#(bad)}"#))
                Issue.record("\(bad) was accepted")
            } catch {
                guard case .invalid(let failure) = error else { Issue.record("\(bad): \(error)"); continue }
                #expect(failure.errors.map(\.field) == ["index"])
                #expect(failure.errors.first?.message.contains("from 0 to 2147483647") == true, "\(failure.errors)")
            }
        }
    }

    @Test func renameNeedsAName() throws {
        #expect(try LibraryRenameRequest.decode(json: Self.bytes(#"{"name": " Jazz "}"#)) == "Jazz")
        #expect(Self.fields { () throws(LibraryError) in try LibraryRenameRequest.decode(json: Self.bytes("{}")) } == ["name"])
        #expect(Self.fields { () throws(LibraryError) in try LibraryRenameRequest.decode(json: Self.bytes(#"{"id": "x", "name": "y"}"#)) }
            == ["id"])
    }

    @Test func moveNamesAnIndexOrALibraryOrBoth() throws {
        #expect(try MoveRequest.decode(json: Self.bytes(#"{"index": 3}"#)) == MoveRequest(library: nil, index: 3))
        #expect(try MoveRequest.decode(json: Self.bytes(#"{"library": "jazz"}"#)) == MoveRequest(library: LibraryID(rawValue: "jazz"), index: nil))
        #expect(try MoveRequest.decode(json: Self.bytes(#"{"library": "jazz", "index": 0}"#)).index == 0)
        #expect(Self.fields { () throws(LibraryError) in try MoveRequest.decode(json: Self.bytes("{}")) } == ["index"])
        #expect(Self.fields { () throws(LibraryError) in try MoveRequest.decode(json: Self.bytes(#"{"library": "No!", "index": "x"}"#)) }.sorted()
            == ["index", "library"])
        #expect(Self.fields { () throws(LibraryError) in try MoveRequest.decode(json: Self.bytes(#"{"libary": "jazz"}"#)) } == ["libary"])
        #expect(throws: LibraryError.indexOutOfRange(index: -1, count: 0)) {
            try MoveRequest.decode(json: Self.bytes(#"{"library": "jazz", "index": -1}"#))
        }
        #expect(throws: LibraryError.self) { try MoveRequest.decode(json: Self.bytes("[1]")) }
    }
}
