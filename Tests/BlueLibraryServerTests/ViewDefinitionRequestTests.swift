import AlbumStoreContract
import TestThreads
import Testing
@testable import BlueLibraryAPI
@testable import BlueLibraryServer
@testable import Library

@Suite("View definition bodies (POST/PATCH /views)", .ownThreads)
struct ViewDefinitionRequestTests {
    @Test("a full creation body reads every member")
    func fullCreation() throws {
        let request = try ViewDefinitionRequest.decodeCreation(json: bytes(
            #"{"id": "everything", "name": " All ", "sources": ["default", "jazz"], "filter": {"q": "blue", "genre": "Jazz", "yearFrom": 1950, "yearTo": 1969}}"#))
        #expect(request.id == ViewID(rawValue: "everything"))
        #expect(request.name == "All")
        #expect(request.sources == [.default, LibraryID(rawValue: "jazz")])
        #expect(request.filter == AlbumFilter(text: "blue", genre: "Jazz", yearFrom: 1950, yearTo: 1969))
    }

    @Test("creation needs id and sources; name and filter may be left out")
    func requiredMembers() throws {
        #expect(fieldErrors { _ = try ViewDefinitionRequest.decodeCreation(json: bytes(#"{"name": "x"}"#)) }.map(\.field) == ["id", "sources"])
        let minimal = try ViewDefinitionRequest.decodeCreation(json: bytes(#"{"id": "v", "sources": ["default"]}"#))
        #expect(minimal == .init(id: ViewID(rawValue: "v"), name: nil, sources: [.default], filter: .all))
    }

    @Test("every bad member is reported at once, named as written")
    func everyProblemAtOnce() {
        let errors = fieldErrors {
            _ = try ViewDefinitionRequest.decodeCreation(json: bytes(
                #"{"id": "Not Valid", "name": "", "sources": ["default", 3, "BAD"], "filter": {"yearFrom": 1990, "yearTo": 1980, "colour": "x"}, "revision": 4}"#))
        }
        #expect(errors.map(\.field) == ["revision", "id", "name", "sources[1]", "sources[2]", "filter.colour", "filter.yearFrom"])
        #expect(errors.first { $0.field == "sources[2]" }?.message.contains("lowercase letters") == true)
        #expect(errors.first { $0.field == "filter.colour" }?.message.contains("Known fields: q, artist, genre, yearFrom, yearTo") == true)
    }

    @Test("a patch changes only what it names; null filter means no filter; id cannot change")
    func patch() throws {
        let rename = try ViewDefinitionRequest.decodeUpdate(json: bytes(#"{"name": "Renamed"}"#))
        #expect(rename == ViewDefinitionRequest(name: "Renamed"))
        let clear = try ViewDefinitionRequest.decodeUpdate(json: bytes(#"{"filter": null}"#))
        #expect(clear.filter == .all && clear.sources == nil)
        #expect(fieldErrors { _ = try ViewDefinitionRequest.decodeUpdate(json: bytes(#"{"id": "other"}"#)) }.map(\.field) == ["id"])
    }

    @Test("wrong kinds say what was sent")
    func wrongKinds() {
        let errors = fieldErrors {
            _ = try ViewDefinitionRequest.decodeUpdate(json: bytes(#"{"sources": "default", "filter": [1], "name": 5}"#))
        }
        #expect(errors.map(\.field) == ["name", "sources", "filter"])
        #expect(errors[1].message.contains("not a string"))
        #expect(errors[2].message.contains("not an array"))
    }
}
