import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import SQLite
import TestThreads
import Testing

@testable import BlueLibraryClient

/// `AlbumListModel(replica:)`: loaded from the replica (also offline), outdated while local
/// edits wait for a sync, current again after it.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class ReplicaModelTests {
    let server: LiveServer
    let directory: TemporaryDirectory

    init() throws {
        server = try LiveServer()
        directory = try TemporaryDirectory(prefix: "bluelibrary-replica-model")
    }

    @Test(arguments: ServerLock.allCases) func theModelReadsTheReplicaOfflineAndIsOutdatedUntilTheSync(lock: ServerLock) async throws {
        let server = try self.server.with(lock)
        let replica = try LibraryReplica(path: directory.file("replica.sqlite"), client: server.client)
        try await replica.sync()
        let model = AlbumListModel(replica: replica, query: AlbumPageQuery(limit: 2))
        #expect(model.isFromReplica && !model.isLoaded)
        try await model.loadAndWait()
        var snapshot = model.snapshot
        #expect(snapshot.isLoaded && snapshot.isFromReplica && !snapshot.isOutdated)
        #expect(snapshot.items.map(\.id) == Array(try await server.albums().prefix(2)).map(\.id))
        let version = try await replica.version()
        #expect(snapshot.next == "r2" && snapshot.version == version)
        try await model.loadAndWait(more: true)
        try await model.loadAndWait(more: true)
        #expect(model.items.count == 5 && !model.hasMore)

        // Offline: a local edit shows at the next load, and the model is outdated until a sync.
        await replica.setOnline(false)
        try await replica.add(AlbumInput(title: "Offline", artist: "Local"), at: 0)
        try await model.loadAndWait()
        snapshot = model.snapshot
        #expect(snapshot.isOutdated && snapshot.items.first?.title == "Offline" && snapshot.items.count == 2)
        await #expect(throws: ReplicaError.offline) { try await replica.sync() }
        // Another load from the replica does not clear it: the edit is still unsynced.
        try await model.loadAndWait()
        #expect(model.isOutdated)

        await replica.setOnline(true)
        try await replica.sync()
        try await model.loadAndWait()
        try await model.loadAndWait(more: true)
        try await model.loadAndWait(more: true)
        snapshot = model.snapshot
        #expect(!snapshot.isOutdated)
        let remote = try await server.albums()
        #expect(snapshot.items.map(\.id) == remote.map(\.id) && snapshot.items.count == 6)
        #expect(!snapshot.items[0].id.hasPrefix("local-"))
    }

    @Test func aFailedReadOfTheReplicaIsTheModelsFailure() async throws {
        let replica = try LibraryReplica(path: directory.file("replica.sqlite"), client: server.client)
        let model = AlbumListModel(replica: replica, query: AlbumPageQuery(cursor: "ignored"))
        // A new replica that never synced: loaded, empty, nothing pending, so not outdated.
        try await model.loadAndWait()
        #expect(model.isLoaded && model.items.isEmpty && !model.isOutdated)
        // The model pages with its own cursors; a cursor from elsewhere is refused by the replica.
        await #expect(throws: ReplicaError.invalidCursor("s1")) { try await replica.page(AlbumPageQuery(cursor: "s1")) }

        // The file loses its table under the replica (another program): the load fails, items kept.
        let vandal = try Connection(path: directory.file("replica.sqlite"))
        try vandal.execute("DROP TABLE albums")
        await #expect { try await model.loadAndWait() } throws: { error in
            guard case let .replica(message) = error as? BlueLibraryClientError else { return false }
            return message.hasPrefix("the replica file failed: ") && message.contains("albums")
        }
        #expect(model.isLoaded && !model.isLoading)
    }
}
