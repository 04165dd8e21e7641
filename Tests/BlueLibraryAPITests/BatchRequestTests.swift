import BlueLibraryAPI
import TestThreads
import Testing

/// `BatchRequest.decode`: every operation read by its single request's rules, every problem
/// named with its operation, nothing partial.
@Suite(.ownThreads) struct BatchRequestTests {
    func decode(_ json: String) throws(BodyError) -> BatchRequest {
        try BatchRequest.decode(json: Array(json.utf8))
    }

    /// The fields named by the refusal of `json` (empty when it is accepted or malformed).
    func refusedFields(_ json: String) -> [String] {
        do {
            _ = try decode(json)
            return []
        } catch {
            guard case let .invalid(failure) = error else { return [] }
            return failure.fields
        }
    }

    @Test func readsEveryKindOfOperation() throws {
        let batch = try decode("""
            {"atomic": false, "operations": [
              {"op": "add", "album": {"title": " Low ", "artist": "David Bowie", "year": "1977"}, "index": 0},
              {"op": "update", "ref": 0, "patch": {"genre": null}, "ifMatch": "\\"abc.0\\""},
              {"op": "move", "id": "01HZY8Q6V9T3X2K7M4N5P6R7S8", "index": 3},
              {"op": "delete", "index": 2},
              {"op": "delete", "ref": 0}
            ]}
            """)
        #expect(batch.atomic == false)
        #expect(batch.operations == [
            .add(try AlbumInput(title: "Low", artist: "David Bowie", year: 1977), index: 0),
            .update(.ref(0), AlbumPatch(genre: .remove), ifMatch: "\"abc.0\""),
            .move(.id("01HZY8Q6V9T3X2K7M4N5P6R7S8"), index: 3),
            .delete(.index(2), ifMatch: nil),
            .delete(.ref(0), ifMatch: nil),
        ])
        #expect(try decode(#"{"operations": [{"op": "delete", "id": "x"}]}"#).atomic == true)
    }

    @Test func readsAMoveToAnotherLibrary() throws {
        let batch = try decode("""
            {"operations": [
              {"op": "move", "id": "01HZY8Q6V9T3X2K7M4N5P6R7S8", "library": "jazz"},
              {"op": "move", "id": "01HZY8Q6V9T3X2K7M4N5P6R7S8", "library": "road-trip-2026", "index": 4}
            ]}
            """)
        #expect(batch.operations == [
            .moveTo(.id("01HZY8Q6V9T3X2K7M4N5P6R7S8"), library: "jazz", index: nil),
            .moveTo(.id("01HZY8Q6V9T3X2K7M4N5P6R7S8"), library: "road-trip-2026", index: 4),
        ])
        // A library id that is not one, null, or not a string; a move with neither field
        #expect(refusedFields("""
            {"operations": [
              {"op": "move", "id": "x", "library": "Jazz!"},
              {"op": "move", "id": "x", "library": null, "index": 1},
              {"op": "move", "ref": 0, "library": 5},
              {"op": "move", "id": "x", "library": "jazz", "index": -2},
              {"op": "move", "id": "x", "libary": "jazz"}
            ]}
            """) == [
                "operations[0].library", "operations[1].library", "operations[2].library", "operations[3].index",
                "operations[4].libary", "operations[4].index",
            ])
    }

    @Test func namesEveryProblemWithItsOperation() {
        #expect(refusedFields("""
            {"operations": [
              {"op": "add", "album": {"title": "", "artist": "A", "titel": "x"}},
              {"op": "update", "ref": 5, "patch": {"year": 99}},
              {"op": "update", "ref": 1, "patch": {}},
              {"op": "dance"},
              {"op": "delete", "id": "x", "index": 3},
              {"op": "move", "id": "x"},
              {"op": "move", "id": "x", "index": -1},
              {"album": {}},
              {"op": "add", "album": null},
              {"op": "update", "id": "x", "patch": [1]},
              7
            ]}
            """) == [
                "operations[0].album.titel", "operations[0].album.title",
                "operations[1].patch.year", "operations[1].ref",
                "operations[3].op",
                "operations[4].id",
                "operations[5].index",
                "operations[6].index",
                "operations[7].op",
                "operations[8].album",
                "operations[9].patch",
                "operations[10]",
                "operations[2].ref",
            ])
    }

    @Test func refusesTheWholeShapeClearly() {
        #expect(refusedFields(#"{}"#) == ["operations"])
        #expect(refusedFields(#"{"operations": []}"#) == ["operations"])
        #expect(refusedFields(#"{"operations": 5}"#) == ["operations"])
        #expect(refusedFields(#"{"operations": [{"op": "delete", "index": 0}], "atomic": "yes", "extra": 1}"#) == ["extra", "atomic"])
        let tooMany = "[" + Array(repeating: #"{"op": "delete", "index": 0}"#, count: 1001).joined(separator: ",") + "]"
        #expect(refusedFields(#"{"operations": \#(tooMany)}"#) == ["operations"])
        // A repeated key counts once, the last value, as everywhere else
        #expect(refusedFields(#"{"operations": [{"op": "delete", "index": 0}], "operations": 3}"#) == ["operations"])
        #expect(refusedFields(#"{"operations": [{"op": "add", "album": {"title": "A", "artist": "B"}, "album": 1}]}"#)
            == ["operations[0].album"])
    }

    @Test func malformedBodiesSayWhatIsWrong() {
        for (body, words) in [("", "empty"), ("  ", "empty"), ("[1]", "must be a JSON object"), (#"{"operations": [}"#, "not valid JSON"),
                              (#"{"operations": []} x"#, "not valid JSON")] {
            do {
                _ = try decode(body)
                Issue.record("accepted \(body)")
            } catch {
                guard case let .malformed(message) = error else { Issue.record("\(error)"); continue }
                #expect(message.contains(words), "\(message)")
            }
        }
    }
}
