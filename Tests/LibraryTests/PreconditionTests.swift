import AlbumStoreContract
import TestThreads
import Testing
@testable import BlueLibraryAPI
@testable import Library

@Suite("If-Match preconditions", .ownThreads)
struct PreconditionTests {
    @Test("a failing precondition refuses the update and commits nothing")
    func failingUpdate() throws {
        let fixture = try Fixture(seeded: true)
        let bowie = try fixture.facade.album(at: 0).album
        let writes = fixture.store.writeCount
        #expect(throws: LibraryError.preconditionFailed(bowie.id)) {
            try fixture.facade.update(id: bowie.id, patch: AlbumPatch(year: .set(2001)), ifMatch: { _ in false })
        }
        #expect(try fixture.facade.album(at: 0).album == bowie)
        #expect(fixture.store.writeCount == writes)
    }

    @Test("the precondition sees the album's value inside the transaction")
    func evaluatedOnCurrentValue() throws {
        // Given a client that read Bowie, then someone else updated it
        let fixture = try Fixture(seeded: true)
        let seenByClient = try fixture.facade.album(at: 0).album
        fixture.clock.advance(milliseconds: 10)
        _ = try fixture.facade.update(id: seenByClient.id, patch: AlbumPatch(genre: .set("Rock")))
        // When the client updates with If-Match on what it saw
        let matchesWhatClientSaw: (Album) -> Bool = { $0.updatedAt == seenByClient.updatedAt }
        // Then the update and the delete are refused
        #expect(throws: LibraryError.preconditionFailed(seenByClient.id)) {
            try fixture.facade.update(id: seenByClient.id, patch: AlbumPatch(year: .set(1)), ifMatch: matchesWhatClientSaw)
        }
        #expect(throws: LibraryError.preconditionFailed(seenByClient.id)) {
            try fixture.facade.delete(id: seenByClient.id, ifMatch: matchesWhatClientSaw)
        }
        // And with the current value they succeed
        let current = try fixture.facade.album(at: 0).album
        #expect(try fixture.facade.delete(id: current.id, ifMatch: { $0 == current }).album == current)
    }
}
