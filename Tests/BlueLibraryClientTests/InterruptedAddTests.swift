#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import SQLite
import TestThreads
import Testing

@testable import BlueLibraryClient

/// A queued add whose Idempotency-Key the server holds for a request that never finished: the
/// server process is killed, and its database is left as a crash between taking the key and
/// recording the answer leaves it (the key "in progress", 409 for 24 hours). The replica waits
/// `interruptedKeyGrace`, then adopts the album when the add took effect, or sends it again
/// under a new key when it did not; either way the album exists once.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class InterruptedAddTests {
    let dataDirectory = TestApp.temporaryDirectory()
    let directory: TemporaryDirectory
    var server: ServerProcess
    let input = AlbumInput(title: "Interrupted", artist: "Crash Test", year: 2001)

    init() throws {
        directory = try TemporaryDirectory(prefix: "bluelibrary-replica-interrupted")
        server = try ServerProcess(dataDirectory: dataDirectory)
    }

    var client: BlueLibraryClient { LiveServer.client(port: server.port) }

    /// The replica file opened by an app whose client talks to the server as it runs now.
    func replica() async throws -> LibraryReplica {
        let replica = try LibraryReplica(path: directory.file("replica.sqlite"), client: client)
        await replica.configure(retryDelay: .milliseconds(1))
        return replica
    }

    /// Kills the server (SIGKILL), runs `sql` on its database file, and starts it again.
    func crash(then sql: String, _ bindings: [SQLiteValue]) throws {
        server.signal(SIGKILL)
        #expect(server.waitForExit(timeout: 20) != nil)
        let database = try Connection(path: dataDirectory + "/bluelibrary.sqlite")
        try database.run(sql, bindings)
        #expect(database.changes == 1)
        server = try ServerProcess(dataDirectory: dataDirectory)
    }

    func serverAlbums() async throws -> [AlbumResource] {
        var query = AlbumPageQuery(limit: 500)
        var albums: [AlbumResource] = []
        while true {
            let page = try await client.list(query)
            albums += page.items
            guard let next = page.next else { return albums }
            query = query.continuing(at: next)
        }
    }

    /// Queues the add offline; answers its Idempotency-Key.
    func queueTheAdd() async throws -> String {
        let replica = try await replica()
        try await replica.sync()
        await replica.setOnline(false)
        try await replica.add(input, at: 1)
        return try #require(try await replica.idempotencyKeys().first)
    }

    /// The first sync keeps the add queued and says why; one after the grace settles it.
    func syncTwice() async throws -> SyncReport {
        let replica = try await replica()
        await #expect { try await replica.sync() } throws: { error in
            guard case let .interruptedAdd(title, _) = error as? ReplicaError else { return false }
            return title == "Interrupted"
        }
        #expect(try await replica.pendingCount() == 1)
        await replica.configure(interruptedKeyGrace: .zero)
        let report = try await replica.sync()
        let local = try await replica.albums()
        let remote = try await serverAlbums()
        #expect(local.map(\.id) == remote.map(\.id) && local.map(\.title) == remote.map(\.title))
        #expect(remote.filter { $0.title == "Interrupted" }.count == 1)
        #expect(remote.count == 6 && remote[1].title == "Interrupted")
        #expect(try await replica.pendingCount() == 0)
        return report
    }

    @Test func anAddThatTookEffectBeforeTheCrashIsAdoptedNotAddedTwice() async throws {
        let key = try await queueTheAdd()
        // The request reached the server and was applied; the crash lost the recorded answer.
        let applied = try await client.add(input, at: 1, idempotencyKey: key)
        try crash(then: "UPDATE idempotency_keys SET status = NULL, headers = NULL, body = NULL WHERE key LIKE ?", [.text("% " + key)])
        let report = try await syncTwice()
        #expect(report.adoptedAdds == 1 && report.resentAdds == 0 && report.pushed == 1)
        #expect(try await serverAlbums()[1].id == applied.id)
    }

    @Test func anAddInterruptedBeforeItsWorkIsSentAgainUnderANewKey() async throws {
        let key = try await queueTheAdd()
        // The server took the key and died before the work: the claim as it would have stored
        // it (its fingerprint taken from another server that received the same request).
        let scratchDirectory = TestApp.temporaryDirectory()
        let scratch = try ServerProcess(dataDirectory: scratchDirectory)
        _ = try await LiveServer.client(port: scratch.port).add(input, at: 1, idempotencyKey: key)
        let claim = try #require(try Connection(path: scratchDirectory + "/bluelibrary.sqlite").firstRow(
            "SELECT key, fingerprint FROM idempotency_keys WHERE key LIKE ?", [.text("% " + key)]) { row in
                (key: try row.string(0), fingerprint: try row.string(1))
            })
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try crash(then: "INSERT INTO idempotency_keys (key, fingerprint, created_at) VALUES (?, ?, ?)",
                  [.text(claim.key), .text(claim.fingerprint), .integer(now)])
        // The key is really held: the same request now answers 409.
        await #expect { _ = try await self.client.add(self.input, at: 1, idempotencyKey: key) } throws: { error in
            (error as? BlueLibraryClientError)?.status == 409
        }
        let report = try await syncTwice()
        #expect(report.adoptedAdds == 0 && report.resentAdds == 1 && report.pushed == 1)
        let keys = try await replica().idempotencyKeys()
        #expect(keys.isEmpty)
    }
}
