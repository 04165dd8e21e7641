import Foundation
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryClient

/// The Swift client, `AlbumListModel` and `LibraryReplica` against a locked server (a token and
/// `access.protectReads`, as docs/security.md advises) when the token is missing,
/// wrong, rotated, or the address is locked out: the refusals are typed (`.unauthorized`,
/// `.tooManyRequests` with `Retry-After`), nothing is sent without a usable token, and a
/// replica keeps its queue. The happy paths on a locked server are the other suites' tests
/// parameterised by `ServerLock`.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class ClientAuthTests {
    let server: LiveServer
    let directory: TemporaryDirectory

    init() throws {
        server = try LiveServer(.locked)
        directory = try TemporaryDirectory(prefix: "bluelibrary-client-auth")
    }

    static let wrongToken = "not-the-token-0123456789"

    func client(token: String?, port: Int? = nil) -> BlueLibraryClient {
        BlueLibraryClient(baseURL: URL(string: "http://127.0.0.1:\(port ?? server.port)")!, token: token)
    }

    /// Locks the test's address out after one wrong token (`access.attemptLimit` 1).
    func lockOutAfterOneWrongToken() throws {
        let patch = try RawHTTPClient.request(
            port: server.port, method: "PATCH", path: "/settings",
            headers: ["Authorization": "Bearer \(ServerLock.token)", "Content-Type": "application/merge-patch+json"],
            body: Array(#"{"access": {"attemptLimit": 1}}"#.utf8))
        try #require(patch.status == 200, "\(patch.text)")
    }

    // MARK: The client

    @Test func withoutATokenEveryKindOfCallIsUnauthorized() async throws {
        let anonymous = client(token: nil)
        let read = await #expect(throws: BlueLibraryClientError.self) { try await anonymous.list() }
        guard case let .unauthorized(problem, retryAfter)? = read else {
            Issue.record("expected .unauthorized, got \(String(describing: read))")
            return
        }
        #expect(problem.status == 401 && problem.type == "urn:bluelibrary:problem:unauthorized" && retryAfter == nil)
        #expect(problem.detail.contains("Authorization: Bearer"))
        #expect(read?.status == 401 && read?.problem == problem && read?.isAccessRefusal == true)

        let write = await #expect(throws: BlueLibraryClientError.self) { try await anonymous.add(AlbumInput(title: "No", artist: "Token")) }
        #expect(write?.status == 401 && write?.isAccessRefusal == true)
        // A call whose answer has no body (DELETE /libraries/{id}) and the blocking face say the same.
        let delete = await #expect(throws: BlueLibraryClientError.self) { try await anonymous.deleteLibrary("default") }
        #expect(delete?.isAccessRefusal == true && delete?.status == 401)
        let blocking = #expect(throws: BlueLibraryClientError.self) { try anonymous.album(at: 0) }
        #expect(blocking?.status == 401)
        let conditional = await #expect(throws: BlueLibraryClientError.self) {
            try await anonymous.list(AlbumPageQuery(limit: 2), ifNoneMatch: "\"any\"")
        }
        #expect(conditional?.status == 401)
        #expect(try await server.albums().count == 5)  // nothing was added
    }

    @Test func aWrongTokenIsUnauthorizedOnOneLineThatNeverRepeatsIt() async throws {
        let wrong = client(token: Self.wrongToken)
        let error = await #expect(throws: BlueLibraryClientError.self) { try await wrong.album(at: 0) }
        guard case let .unauthorized(problem, _)? = error else {
            Issue.record("expected .unauthorized, got \(String(describing: error))")
            return
        }
        #expect(problem.detail.contains("not right"))
        let description = try #require(error?.description)
        #expect(!description.contains("\n") && !description.contains(Self.wrongToken))
        // The right one, as a value: the same call answers.
        #expect(try await client(token: ServerLock.token).album(at: 0).index == 0)
    }

    @Test func theProviderIsAskedForEveryRequestSoARotatedTokenIsSent() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        defer { proxy.close() }
        let current = Mutex<String?>(nil)
        let asked = Atomic<Int>(0)
        let rotating = BlueLibraryClient(baseURL: URL(string: "http://127.0.0.1:\(proxy.port)")!, tokenProvider: {
            asked.add(1, ordering: .relaxed)
            return current.withLock { $0 }
        })
        #expect(rotating.hasToken)
        await #expect(throws: BlueLibraryClientError.self) { try await rotating.album(at: 0) }
        current.withLock { $0 = ServerLock.token }  // the app stored the token (in its keychain)
        #expect(try await rotating.album(at: 0).index == 0)
        #expect(try Self.blockingFirstPage(rotating).items.count == 1)  // the blocking face asks too
        current.withLock { $0 = "" }  // signed out: an empty token sends none
        await #expect(throws: BlueLibraryClientError.self) { try await rotating.album(at: 0) }
        #expect(asked.load(ordering: .relaxed) == 4)
        #expect(proxy.requests.map { $0.headers["authorization"] } == [nil, "Bearer \(ServerLock.token)", "Bearer \(ServerLock.token)", nil])
    }

    /// A call of the blocking face (from a function that is not `async`, so it is the blocking one).
    static func blockingFirstPage(_ client: BlueLibraryClient) throws -> AlbumPage { try client.list(AlbumPageQuery(limit: 1)) }

    @Test func aFailingProviderOrAnImpossibleTokenSendsNothing() async throws {
        struct KeychainLocked: Error {}
        let proxy = try GatedProxy(upstreamPort: server.port)
        defer { proxy.close() }
        let failing = BlueLibraryClient(baseURL: URL(string: "http://127.0.0.1:\(proxy.port)")!, tokenProvider: { throw KeychainLocked() })
        let error = await #expect(throws: BlueLibraryClientError.self) { try await failing.album(at: 0) }
        guard case let .invalidRequest(message)? = error else {
            Issue.record("expected .invalidRequest, got \(String(describing: error))")
            return
        }
        #expect(message.contains("token provider failed") && message.contains("KeychainLocked"))
        let spaced = client(token: "two words-0123456789", port: proxy.port)
        let impossible = await #expect(throws: BlueLibraryClientError.self) { try await spaced.add(AlbumInput(title: "A", artist: "B")) }
        #expect(impossible?.description.contains("printable ASCII") == true)
        #expect(impossible?.description.contains("two words") == false)
        #expect(proxy.requests.isEmpty)
    }

    @Test func aLockedOutAddressGets429WithRetryAfterEvenWithTheRightToken() async throws {
        try lockOutAfterOneWrongToken()
        let wrong = client(token: Self.wrongToken)
        #expect(await #expect(throws: BlueLibraryClientError.self) { try await wrong.album(at: 0) }?.status == 401)
        for candidate in [wrong, server.client, client(token: nil)] {
            let error = await #expect(throws: BlueLibraryClientError.self) { try await candidate.album(at: 0) }
            guard case let .tooManyRequests(problem, retryAfter)? = error else {
                Issue.record("expected .tooManyRequests, got \(String(describing: error))")
                continue
            }
            #expect(problem.status == 429 && problem.type == "urn:bluelibrary:problem:locked-out")
            let seconds = try #require(retryAfter)
            #expect(seconds >= 1 && error?.retryAfter == seconds && error?.isAccessRefusal == true)
            #expect(error?.description.contains("\(seconds) seconds") == true)
        }
        // The model's load fails the same way.
        let model = AlbumListModel(client: server.client, query: AlbumPageQuery(limit: 2))
        let failed = await #expect(throws: BlueLibraryClientError.self) { try await model.loadAndWait() }
        #expect(failed?.status == 429 && failed?.retryAfter != nil && model.items.isEmpty && !model.isLoaded)
    }

    // MARK: The model

    @Test func aModelWithoutTheTokenFailsItsLoadWith401AndWithItLoads() async throws {
        let refused = AlbumListModel(client: client(token: nil), query: AlbumPageQuery(limit: 2))
        let recorder = Recorder()
        refused.addListener(recorder)
        let error = await #expect(throws: BlueLibraryClientError.self) { try await refused.loadAndWait() }
        #expect(error?.status == 401)
        #expect(await recorder.wait(for: 2) == ["start", "fail(401)"])
        #expect(!refused.isLoaded && refused.items.isEmpty)

        let allowed = AlbumListModel(client: server.client, query: AlbumPageQuery(limit: 2))
        try await allowed.loadAndWait()
        #expect(allowed.items.count == 2 && allowed.hasMore)
    }

    // MARK: The replica

    @Test func aReplicaRefusedWithA401KeepsItsQueueUntilTheTokenIsRight() async throws {
        let current = Mutex<String?>(ServerLock.token)
        let client = BlueLibraryClient(baseURL: URL(string: server.url)!, tokenProvider: { current.withLock { $0 } })
        let replica = try LibraryReplica(path: directory.file("replica.sqlite"), client: client)
        try await replica.sync()
        let seeded = try await replica.albums()
        try await replica.add(AlbumInput(title: "Queued", artist: "Offline"), at: 0)
        try await replica.move(id: seeded[3].id, to: 1)
        try await replica.delete(id: seeded[4].id)
        let queued = try await replica.pending()
        let shown = try await replica.albums()

        for token in [nil, Self.wrongToken] {
            current.withLock { $0 = token }
            let error = await #expect(throws: ReplicaError.self) { try await replica.sync() }
            guard case let .client(clientError)? = error else {
                Issue.record("expected .client(.unauthorized), got \(String(describing: error))")
                continue
            }
            #expect(clientError.status == 401 && clientError.isAccessRefusal)
            // Nothing dropped, nothing sent: the queue and what the app sees are as they were.
            #expect(try await replica.pending() == queued)
            #expect(try await replica.albums() == shown)
            #expect(await replica.isOnline)  // the server answered
        }
        #expect(try await server.albums().count == 5)

        current.withLock { $0 = ServerLock.token }
        let report = try await replica.sync()
        #expect(report.pushed == 3 && report.dropped.isEmpty)
        #expect(try await replica.pending().isEmpty)
        #expect(try await server.albums().map(\.id) == (try await replica.albums()).map(\.id))
        #expect(try await server.albums().first?.title == "Queued")
    }

    @Test func aLockedOutReplicaKeepsItsQueueAndSaysHowLongToWait() async throws {
        let wrong = try LibraryReplica(path: directory.file("locked.sqlite"), client: client(token: Self.wrongToken))
        await wrong.configure(maxAttempts: 5, retryDelay: .milliseconds(1))
        try await wrong.add(AlbumInput(title: "Never", artist: "Sent"))
        try await wrong.add(AlbumInput(title: "Nor", artist: "This"))
        let queued = try await wrong.pending()
        try lockOutAfterOneWrongToken()
        let first = await #expect(throws: ReplicaError.self) { try await wrong.push() }
        #expect(first.flatMap { if case let .client(error) = $0 { error.status } else { nil } } == 401)
        let second = await #expect(throws: ReplicaError.self) { try await wrong.sync() }
        guard case let .client(.tooManyRequests(_, retryAfter))? = second else {
            Issue.record("expected .client(.tooManyRequests), got \(String(describing: second))")
            return
        }
        #expect((retryAfter ?? 0) >= 1)
        #expect(try await wrong.pending() == queued)
        #expect(try await wrong.pending().map(\.kind) == ["add", "add"])
    }
}
