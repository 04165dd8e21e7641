import AlbumStoreContract
import Essentials
import Foundation
import HTTPServer
import Library
import Synchronization
import TestThreads
import Testing
@testable import BlueLibraryServer

/// The key is claimed by the request's write, in its transaction: a request whose database
/// went away before its write committed leaves the key free (a retry runs once); one whose
/// write committed holds it, so a retry never writes twice, and is told the change was saved
/// when its answer was lost.
@Suite("Idempotency keys across a database outage", .ownThreads)
struct IdempotencyOutageTests {
    struct Outage: UnavailableDependency {
        var isUnavailable: Bool { true }
        var retryAfterSeconds: Int { 2 }
    }

    struct Refused: Error {}

    let keys = InMemoryIdempotencyStore()
    let albums: InMemoryAlbumStore
    var guardian: IdempotencyGuard { IdempotencyGuard(store: keys, clock: { Date() }) }
    let context = RequestContext(peerAddress: IPAddress("127.0.0.1")!)
    let request = HTTPRequest(
        method: .post, target: "/albums", headers: ["Idempotency-Key": "k-1"], body: Array(#"{"title":"T","artist":"A"}"#.utf8))

    init() {
        albums = InMemoryAlbumStore(idempotency: keys)
    }

    /// The request's write: one committed transaction of the store (which claims the key).
    func write() throws {
        try albums.write(.default) { _ throws in }
    }

    @Test("the database gone before the write committed: 503 that says a repeat with the key is safe; the repeat writes once")
    func outageBeforeTheCommitLeavesTheKeyFree() throws {
        do {
            _ = try guardian.run(request, context: context) { throw LibraryError.storage(UnderlyingError(Outage())) }
            Issue.record("expected a 503")
        } catch let error as HTTPError {
            #expect(error.status == .serviceUnavailable)
            #expect(error.headers["Retry-After"] == "2")
            #expect(error.detail.contains("may or may not have been saved"))
            #expect(error.detail.contains("same Idempotency-Key"))
        }
        let response = try guardian.run(request, context: context) {
            try write()
            return HTTPResponse(status: .created, body: .bytes([7]))
        }
        #expect(response.status == .created)
        let replayed = try guardian.run(request, context: context) {
            try write()
            return HTTPResponse(status: .created, body: .bytes([8]))
        }
        #expect(replayed.headers["Idempotent-Replayed"] == "true")
        guard case let .bytes(body) = replayed.body else { Issue.record("a replay has its bytes"); return }
        #expect(body == [7], "the first answer")
        #expect(albums.writeCount == 1, "written once")
    }

    @Test("the database gone after the write committed (its answer lost): the repeat is 409 'saved' and writes nothing")
    func outageAfterTheCommitHoldsTheKey() throws {
        do {
            _ = try guardian.run(request, context: context) {
                try write()
                throw LibraryError.storage(UnderlyingError(Outage()))
            }
            Issue.record("expected an error")
        } catch let error as LibraryError {
            guard case .storage = error else { Issue.record("unexpected \(error)"); return }
        }
        do {
            _ = try guardian.run(request, context: context) {
                try write()
                return HTTPResponse(status: .created, body: .bytes([]))
            }
            Issue.record("expected a 409")
        } catch let error as HTTPError {
            #expect(error.status == .conflict)
            #expect(error.detail.contains("was saved"))
        }
        #expect(albums.writeCount == 1, "never written twice")
    }

    @Test("a failure before any write leaves the key free (the control)")
    func certainFailureLeavesTheKeyFree() throws {
        #expect(throws: Refused.self) { _ = try guardian.run(request, context: context) { throw Refused() } }
        let response = try guardian.run(request, context: context) {
            try write()
            return HTTPResponse(status: .created, body: .bytes([1]))
        }
        #expect(response.status == .created)
    }
}
