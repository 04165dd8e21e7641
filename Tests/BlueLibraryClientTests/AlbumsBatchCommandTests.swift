import BlueLibraryAPI
import BlueLibraryClient
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// `bluelibrary albums update` and `bluelibrary albums apply FILE`: the built executable
/// against the real app.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class AlbumsBatchCommandTests {
    let server: LiveServer
    let directory: TemporaryDirectory

    init() throws {
        server = try LiveServer()
        directory = try TemporaryDirectory(prefix: "bluelibrary-apply")
    }

    func albums(_ arguments: [String]) throws -> CommandRun {
        try CommandRun.bluelibrary(["albums"] + arguments, environment: ["BLUELIBRARY_URL": server.url])
    }

    func titles() async throws -> [String] { try await server.albums().map(\.title) }

    @Test func updateChangesFieldsByIdOrIndexAndHonoursIfMatch() async throws {
        let first = try await server.albums()[0]
        let byID = try albums(["update", first.id, "--title", "Best of Bowie (2024)", "--clear", "year", "--json"])
        #expect(byID.status == 0, "\(byID.stderr)")
        let album = try #require(try JSONSerialization.jsonObject(with: Data(byID.stdout.utf8)) as? [String: Any])
        #expect(album["title"] as? String == "Best of Bowie (2024)" && album["year"] is NSNull)
        let byIndex = try albums(["update", "--at", "1", "--genre", "Ska"])
        #expect(byIndex.status == 0 && byIndex.stdout.hasPrefix("Updated"), "\(byIndex.stderr)")
        #expect(try await server.albums()[1].genre == "Ska")
        // A stale ETag: refused (412), nothing changed
        let stale = try albums(["update", first.id, "--artist", "Someone", "--if-match", "\"0000000000000000.0\""])
        #expect(stale.status == 1 && stale.stderr.contains("changed since you read it"), "\(stale.stderr)")
        #expect(try albums(["update", first.id]).status == 2)
    }

    @Test func aBatchMovesAlbumsToAnotherLibrary() async throws {
        _ = try await server.client.createLibrary(id: "jazz")
        let before = try await server.albums()
        // The Swift client: an add filed in jazz, and an album moved to the start there
        let answer = try await server.client.batch([
            .add(AlbumInput(title: "Kind of Blue", artist: "Miles Davis")),
            .move(.ref(0), toLibrary: "jazz"),
            .move(.id(before[0].id), toLibrary: "jazz", at: 0),
        ])
        #expect(answer.applied == 3 && answer.destinations == ["jazz": 2])
        #expect(answer.results[2].album?.library == "jazz" && answer.results[2].album?.index == 0)
        #expect(answer.results[2].arrivalVersion == 2 && answer.results[1].arrivalVersion == 1)
        #expect(try await server.albums().map(\.id) == before.dropFirst().map(\.id))
        let jazz = try RawHTTPClient.request(port: server.port, path: "/libraries/jazz/albums").json()["items"] as? [[String: Any]]
        #expect(jazz?.compactMap { $0["title"] as? String } == [before[0].title, "Kind of Blue"])
        // The CLI: a file whose move names the library; the summary says where it went
        let file = directory.file("move.jsonl")
        try #"{"op": "move", "id": "\#(before[1].id)", "library": "jazz"}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let run = try albums(["apply", file])
        #expect(run.status == 0 && run.stdout.contains("(albums moved to jazz at 3)"), "\(run.stdout) \(run.stderr)")
        // A batch of one move is undone as the single move: back from jazz, from the source
        #expect(try albums(["undo"]).stdout.contains("back from library jazz"))
        #expect(try await server.albums().map(\.id) == before.dropFirst().map(\.id))
    }

    @Test func applyRunsAFileOfOperationsInOneStep() async throws {
        let before = try await titles()
        let file = directory.file("changes.jsonl")
        try """
            {"op": "add", "album": {"title": "Low", "artist": "David Bowie"}, "index": 0}
            {"op": "update", "ref": 0, "patch": {"year": 1977}}

            {"op": "delete", "index": 5}\r
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let run = try albums(["apply", file])
        #expect(run.status == 0 && run.stdout.hasPrefix("Applied 3 of 3 operations"), "\(run.stderr)")
        #expect(try await titles() == ["Low"] + before.dropLast())
        #expect(try albums(["undo"]).stdout.contains("take back a batch of 3 changes"))
        #expect(try await titles() == before)

        // A refused operation names its line, and nothing is applied
        try """
            {"op": "delete", "index": 0}
            {"op": "move", "id": "01HZY8Q6V9T3X2K7M4N5P6R7S8", "index": 0}
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let refused = try albums(["apply", file])
        #expect(refused.status == 1 && refused.stderr.contains("changes.jsonl:2: operations[1].id"), "\(refused.stderr)")
        #expect(try await titles() == before)
        // Not atomic: the good one applies, the refused one is listed
        let partial = try albums(["apply", file, "--no-atomic"])
        #expect(partial.status == 0 && partial.stdout.hasPrefix("Applied 1 of 2"), "\(partial.stdout) \(partial.stderr)")
        #expect(partial.stderr.contains("changes.jsonl:2: refused"))
        // A line that is not JSON is named before anything is sent
        try "{\"op\": \"delete\", \"index\": 0}\nnot json\n".write(toFile: file, atomically: true, encoding: .utf8)
        let broken = try albums(["apply", file])
        #expect(broken.status == 1 && broken.stderr.contains("changes.jsonl:2: not one JSON object"), "\(broken.stderr)")
        #expect(try await titles() == Array(before.dropFirst()))
    }
}
