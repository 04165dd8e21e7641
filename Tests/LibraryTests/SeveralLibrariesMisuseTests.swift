import AlbumStoreContract
import Foundation
@testable import Library
import TestThreads
import Testing

/// A write over several libraries that names one twice, or whose body forgets a library's
/// events, fails as an error (nothing written), never by stopping the process.
@Suite(.ownThreads)
struct SeveralLibrariesMisuseTests {
    @Test func aLibraryNamedTwiceOrEventsMissingIsAnErrorNotATrap() throws {
        let store = InMemoryAlbumStore()
        let facade = LibraryFacade(store: store, clock: { Date() }, ids: .random(clock: { Date() }))
        #expect(throws: LibraryFacade.SeveralLibrariesMisuse.self) {
            try LibraryFacade.mutatingUntranslated([facade, facade]) { _ in ((), [[], []]) }
        }
        #expect(throws: LibraryFacade.SeveralLibrariesMisuse.self) {
            try LibraryFacade.mutatingUntranslated([facade]) { _ in ((), []) }
        }
        #expect(throws: LibraryError.self) {
            try LibraryFacade.mutating(leaving: facade, arriving: facade) { _, _ in ((), [], []) }
        }
        #expect(try facade.count() == 0 && facade.currentVersion() == 0, "nothing was written")
    }
}
