import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryClient

/// The replica's push in batches (`POST /batch`): operations on albums added in the same
/// batch, conflicts decided per operation while the rest of the batch applies, and the pull
/// after a push that skips the replica's own changes.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class ReplicaBatchPushTests {
    let server: LiveServer
    let directory: TemporaryDirectory
    var client: BlueLibraryClient { server.client }

    init() throws {
        server = try LiveServer()
        directory = try TemporaryDirectory(prefix: "bluelibrary-replica-batch")
    }

    func replica(batchSize: Int) async throws -> LibraryReplica {
        let replica = try LibraryReplica(path: directory.file("replica.sqlite"), client: client)
        await replica.configure(retryDelay: .milliseconds(1), pushBatchSize: batchSize)
        return replica
    }

    func expectIdentical(_ replica: LibraryReplica, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let local = try await replica.albums().map { ($0.id, $0.title, $0.year) }
        let remote = try await server.albums().map { ($0.id, $0.title, $0.year) }
        #expect(local.map(\.0) == remote.map(\.0) && local.map(\.1) == remote.map(\.1) && local.map(\.2) == remote.map(\.2),
                sourceLocation: sourceLocation)
        #expect(try await replica.hasPendingChanges() == false, sourceLocation: sourceLocation)
    }

    @Test func conflictsInABatchAreDecidedPerOperationAndTheRestApplies() async throws {
        let replica = try await replica(batchSize: 7)
        try await replica.sync()
        let seeded = try await replica.albums()
        await replica.setOnline(false)
        // Offline: adds (some edited, moved and deleted again before the push), and edits of
        // albums that another client deletes meanwhile
        var added: [AlbumResource] = []
        for index in 0..<30 {
            added.append(try await replica.add(AlbumInput(title: "Offline \(index)", artist: "Batch"), at: index % 3 == 0 ? 0 : nil))
        }
        for album in added[0..<10] { try await replica.update(id: album.id, AlbumPatchInput(year: 1990)) }
        for album in added[10..<15] { try await replica.move(id: album.id, to: 1) }
        for album in added[15..<20] { try await replica.delete(id: album.id) }
        try await replica.move(id: seeded[0].id, to: 34)  // past the server's end by then: the last index
        try await replica.update(id: seeded[1].id, AlbumPatchInput(title: "Edited Offline"))  // deleted on the server: dropped
        try await replica.delete(id: seeded[2].id)  // deleted on the server too: a no-op
        for album in seeded[1...2] { _ = try await client.delete(id: album.id) }

        await replica.setOnline(true)
        let report = try await replica.sync()
        // Then every operation but the patch of the deleted album applied, in batches
        #expect(report.pushed == 30 + 10 + 5 + 5 + 2)
        #expect(report.dropped.map(\.operation.kind) == ["update"])
        #expect(report.dropped.first?.reason.contains("deleted on the server") == true)
        try await expectIdentical(replica)
        #expect(try await server.albums().last?.id == seeded[0].id)
    }

    @Test func thePullAfterAPushTakesTheReplicasOwnChangesFromTheAnswers() async throws {
        let replica = try await replica(batchSize: 10)
        try await replica.sync()
        await replica.setOnline(false)
        var added: [AlbumResource] = []
        for index in 0..<24 { added.append(try await replica.add(AlbumInput(title: "Own \(index)", artist: "Batch"), at: 2)) }
        for album in added[0..<5] { try await replica.update(id: album.id, AlbumPatchInput(year: 2001)) }
        try await replica.delete(id: added[5].id)
        await replica.setOnline(true)
        // When nothing of another client comes in between, the pull has nothing to fetch (three
        // batches of ten; an entry pushed alone would be pulled back)
        let report = try await replica.sync()
        #expect(report.pushed == 30 && report.pulledChanges == 0, "\(report)")
        try await expectIdentical(replica)
        // And a change of another client afterwards still arrives through the feed
        _ = try await client.add(AlbumInput(title: "Elsewhere", artist: "Other"))
        let own = try await replica.albums().filter { $0.title.hasPrefix("Own ") }
        try await replica.update(id: own[1].id, AlbumPatchInput(title: "Own again"))
        try await replica.delete(id: own[2].id)
        let next = try await replica.sync()
        #expect(next.pushed == 2 && next.pulledChanges == 3)
        try await expectIdentical(replica)
    }
}
