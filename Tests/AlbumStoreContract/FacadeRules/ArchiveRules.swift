@testable import BlueLibraryAPI
import Essentials
import Foundation
import Testing
import Library

struct ArchiveRules {
    let factory: AlbumStoreFactory

    /// Exports `facade` and returns the chunks.
    func export(_ facade: LibraryFacade, chunkSize: Int = 64 * 1024) throws -> [[UInt8]] {
        var chunks: [[UInt8]] = []
        try facade.exportArchive(chunkSize: chunkSize) { chunks.append($0) }
        return chunks
    }

    func roundTrip() throws {
        // Given a seeded library with an edit, an odd title and two saved states
        let source = try FacadeFixture(factory, seeded: true)
        _ = try source.facade.add(AlbumInput(title: "Quote \" and \\ and\nnewline ☃", artist: "Ünïcødé"), at: 1)
        try source.facade.setState(client: "phone", index: 3)
        let albums = try source.facade.page(PageRequest(limit: 500)).items.map(\.album)
        let states = try source.storedStates()
        // When it is exported and imported elsewhere
        let bytes = try export(source.facade).flatMap { $0 }
        let target = try FacadeFixture(factory)
        let summary = try target.facade.importArchive(bytes)
        // Then everything matches, ids and timestamps included
        #expect(summary == ArchiveImportSummary(albumCount: 6, stateCount: 2, version: 1))
        #expect(try target.facade.page(PageRequest(limit: 500)).items.map(\.album) == albums)
        #expect(try target.storedStates() == states)
        // And the export is valid JSON that ends with a newline
        #expect(bytes.last == UInt8(ascii: "\n"))
        #expect(try JSONSerialization.jsonObject(with: Data(bytes)) is [String: Any])
    }

    func streams() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let chunks = try export(fixture.facade, chunkSize: 100)
        #expect(chunks.count > 5)
        #expect(chunks.dropLast().allSatisfy { $0.count >= 100 && $0.count < 100 + 400 })
        let text = String(decoding: chunks.flatMap { $0 }, as: UTF8.self)
        #expect(text.hasPrefix(#"{"format":"bluelibrary.archive","formatVersion":1,"exportedAt":""#))
        #expect(text.contains(#""library":"default","version":1,"albums":["#))
    }

    /// The states go out in chunks, never in one buffer, however many there are.
    func streamsStates() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        for client in 0..<3_000 { try fixture.facade.setState(client: "client-\(client)", index: 0) }
        let chunks = try export(fixture.facade, chunkSize: 4096)
        #expect(chunks.allSatisfy { $0.count < 4096 + 400 }, "largest chunk \(chunks.map(\.count).max() ?? 0) bytes")
        #expect(try ArchiveDocument.parse(json: chunks.flatMap { $0 }).states.count == 3_000)
    }

    func parseBack() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let document = try ArchiveDocument.parse(json: export(fixture.facade).flatMap { $0 })
        #expect(document.albums == (try fixture.facade.page(PageRequest(limit: 500)).items.map(\.album)))
        #expect(document.version == 1 && document.library == "default")
        #expect(document.exportedAt == Timestamp.truncated(fixture.clock.now))
    }

    func outputFailure() throws {
        struct Gone: Error {}
        let fixture = try FacadeFixture(factory, seeded: true)
        let error = libraryError { _ = try fixture.facade.exportArchive(chunkSize: 10) { _ in throw Gone() } }
        guard case .outputFailed? = error else {
            Issue.record("expected outputFailed, got \(String(describing: error))")
            return
        }
    }

    func replaces() throws {
        let source = try FacadeFixture(factory, seeded: true)
        let bytes = try export(source.facade).flatMap { $0 }
        let target = try FacadeFixture(factory)
        try target.add("Old 1", "Old 2")
        try target.facade.setState(client: "tv", index: 1)
        let before = try target.facade.version()
        try target.facade.importArchive(bytes)
        #expect(try target.titles() == (try source.titles()))
        #expect(try target.facade.version() == before + 1)
        #expect(try target.facade.undoStatus().depth == 0)
        #expect(try target.storedStates().isEmpty)
    }

    func invalidDocument() throws {
        // Given a library and a document with bad albums (one good, then three bad, one duplicate)
        let fixture = try FacadeFixture(factory, seeded: true)
        let before = (albums: try fixture.storedAlbums(), version: try fixture.facade.version())
        let good = #"{"id":"01HZY8Q6V9T3X2K7M4N5P6R7S8","title":"T","artist":"A","genre":"Pop","year":1992,"coverUrl":null,"createdAt":"2024-01-01T00:00:00.000Z","updatedAt":"2024-01-01T00:00:00.000Z"}"#
        let document = #"{"format":"bluelibrary.archive","formatVersion":1,"albums":["#
            + good + ","
            + #"{"id":"01HZY8Q6V9T3X2K7M4N5P6R7S9","title":"T","artist":"A","year":12,"createdAt":"2024-01-01T00:00:00Z","updatedAt":"2024-01-01T00:00:00Z"},"#
            + #"{"id":"nope","title":"","artist":"A","createdAt":"yesterday","updatedAt":"2024-01-01T00:00:00Z"},"#
            + #""not an album","#
            + good + "]}"
        // When it is imported
        let error = libraryError { _ = try fixture.facade.importArchive(bytes(document)) }
        // Then every problem is located
        guard case .archiveInvalid(let problems)? = error else {
            Issue.record("expected archiveInvalid, got \(String(describing: error))")
            return
        }
        #expect(problems.map(\.path) == [
            "albums[1].year", "albums[2].id", "albums[2].title", "albums[2].createdAt", "albums[3]", "albums[4].id",
        ])
        try #require(problems.count == 6)
        #expect(problems[0].albumIndex == 1 && problems[0].field == "year")
        #expect(problems[0].message.hasPrefix("albums[1].year must be an integer between 1000 and 9999"))
        #expect(problems[5].message.contains("duplicates albums[0].id"))
        // And the library is untouched
        #expect(try fixture.storedAlbums() == before.albums)
        #expect(try fixture.facade.version() == before.version)
    }

    func otherProblems() throws {
        let fixture = try FacadeFixture(factory)
        let error = libraryError {
            _ = try fixture.facade.importArchive(bytes(
                #"{"format":"bluelibrary.archive","formatVersion":1,"albumz":[],"albums":[],"#
                    + #""states":[{"client":"a b","currentAlbumIndex":-1,"albumID":"01HZY8Q6V9T3X2K7M4N5P6R7S8"}]}"#))
        }
        guard case .archiveInvalid(let problems)? = error else {
            Issue.record("expected archiveInvalid")
            return
        }
        #expect(problems.map(\.path) == ["albumz", "states[0].client", "states[0].currentAlbumIndex", "states[0].albumID"])
        guard case .malformed? = libraryError({ _ = try fixture.facade.importArchive(bytes("{\"format\":")) }) else {
            Issue.record("expected malformed")
            return
        }
    }
}

extension FacadeRules {
    static let archiveRules: [ContractCheck] = [
        ContractCheck("export then import into a new library gives equal albums, order and states") { try ArchiveRules(factory: $0).roundTrip() },
        ContractCheck("export streams: small chunks, header first, albums as they are read") { try ArchiveRules(factory: $0).streams() },
        ContractCheck("export streams the states too: no chunk holds them all") { try ArchiveRules(factory: $0).streamsStates() },
        ContractCheck("export parses back with the public parser") { try ArchiveRules(factory: $0).parseBack() },
        ContractCheck("an output failure stops the export with outputFailed") { try ArchiveRules(factory: $0).outputFailure() },
        ContractCheck("import replaces everything, clears undo and bumps the version once") { try ArchiveRules(factory: $0).replaces() },
        ContractCheck("an invalid document changes nothing and names albums[i].field") { try ArchiveRules(factory: $0).invalidDocument() },
        ContractCheck("unknown keys, bad states and syntax errors are refused") { try ArchiveRules(factory: $0).otherProblems() },
    ]
}
