import AlbumStoreContract
import Essentials
import Foundation
import HTTPServer
import Library
import Synchronization
import TestThreads
import Testing
@testable import BlueLibraryServer

/// A write whose database went away midway may have committed, so its Idempotency-Key is never
/// released (a retry must not write twice) and its 503 does not promise that a repeat is safe.
@Suite("Idempotency keys across a database outage", .ownThreads)
struct IdempotencyOutageTests {
    struct Outage: UnavailableDependency {
        var isUnavailable: Bool { true }
        var retryAfterSeconds: Int { 2 }
    }

    struct Refused: Error {}

    let store = InMemoryIdempotencyStore()
    var guardian: IdempotencyGuard { IdempotencyGuard(store: store, clock: { Date() }) }
    let context = RequestContext(peerAddress: IPAddress("127.0.0.1")!)
    let request = HTTPRequest(
        method: .post, target: "/albums", headers: ["Idempotency-Key": "k-1"], body: Array(#"{"title":"T","artist":"A"}"#.utf8))

    @Test("an unavailable database midway: 503 without 'safe to repeat', key kept, the retry is 409 and writes nothing")
    func ambiguousFailureKeepsTheKey() throws {
        let writes = Mutex(0)
        do {
            _ = try guardian.run(request, context: context) {
                writes.withLock { $0 += 1 }
                throw LibraryError.storage(UnderlyingError(Outage()))
            }
            Issue.record("expected a 503")
        } catch let error as HTTPError {
            #expect(error.status == .serviceUnavailable)
            #expect(error.headers["Retry-After"] == "2")
            #expect(!error.detail.contains("safe to repeat"), "it may have been saved: \(error.detail)")
            #expect(error.detail.contains("may or may not have been saved"))
        }
        do {
            _ = try guardian.run(request, context: context) {
                writes.withLock { $0 += 1 }
                return HTTPResponse(status: .created, body: .bytes([]))
            }
            Issue.record("expected a 409")
        } catch let error as HTTPError {
            #expect(error.status == .conflict, "the key stays claimed: a retry never writes twice")
        }
        #expect(writes.withLock { $0 } == 1)
    }

    @Test("a failure that changed nothing for certain releases the key (the control)")
    func certainFailureReleasesTheKey() throws {
        #expect(throws: Refused.self) { _ = try guardian.run(request, context: context) { throw Refused() } }
        let response = try guardian.run(request, context: context) { HTTPResponse(status: .created, body: .bytes([1])) }
        #expect(response.status == .created)
    }
}
