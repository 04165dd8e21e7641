import Essentials
import Foundation
import AlbumStoreContract
import TestThreads
import Testing
@testable import Library

@Suite("Archive export and import", .ownThreads)
struct ArchiveTests {
    /// Exports `facade` and returns the chunks.
    func export(_ facade: LibraryFacade, chunkSize: Int = 64 * 1024) throws -> [[UInt8]] {
        var chunks: [[UInt8]] = []
        try facade.exportArchive(chunkSize: chunkSize) { chunks.append($0) }
        return chunks
    }

    @Test("format name and version are checked first", arguments: [
        (#"{"format":"bluelibrary.archive","formatVersion":2,"albums":[]}"#, "formatVersion",
         "formatVersion 2 is not supported: this server reads formatVersion 1"),
        (#"{"format":"something.else","formatVersion":1,"albums":[]}"#, "format", "format must be \"bluelibrary.archive\""),
        (#"{"formatVersion":1,"albums":[]}"#, "format", "format must be"),
    ])
    func header(document: String, path: String, messagePrefix: String) throws {
        let fixture = try Fixture(seeded: true)
        let error = libraryError { _ = try fixture.facade.importArchive(bytes(document)) }
        guard case .archiveInvalid(let problems)? = error else {
            Issue.record("expected archiveInvalid")
            return
        }
        #expect(problems.map(\.path) == [path])
        #expect(problems.first?.message.hasPrefix(messagePrefix) == true)
        #expect(try fixture.facade.count() == 5)
    }
}
