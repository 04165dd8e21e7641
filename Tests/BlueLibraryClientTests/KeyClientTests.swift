import BlueLibraryClient
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// API keys through the Swift client against a locked server (the suite's token is its admin
/// key `token`): a read key reads and is refused writes (403), a key for one library does
/// not see the others (404), a revoked key is refused (401), and `whoAmI` says who is asking (without a key too).
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class KeyClientTests {
    let server: LiveServer
    var admin: BlueLibraryClient { server.client }

    init() throws { server = try LiveServer(.locked) }

    func client(key: String?) -> BlueLibraryClient {
        BlueLibraryClient(baseURL: URL(string: server.url)!, timeout: 60, token: key)
    }

    @Test func aReadKeyReadsIsRefusedWritesAndStopsWorkingWhenRevoked() async throws {
        let created = try await admin.createKey(name: "reader", scopes: [.read])
        let secret = try #require(created.secret)
        #expect(created.id.hasPrefix("bl_") && created.id.count == 11 && secret.hasPrefix(created.id + "_") && secret.count == 55)
        #expect(created.name == "reader" && created.scopes == ["read"] && created.libraries == nil && created.expiresAt == nil)

        let reader = client(key: secret)
        let page = try await reader.list()
        #expect(page.items.count == 5)

        let write = await #expect(throws: BlueLibraryClientError.self) { try await reader.add(AlbumInput(title: "No", artist: "Scope")) }
        guard case let .problem(problem)? = write else {
            Issue.record("expected .problem, got \(String(describing: write))")
            return
        }
        #expect(problem.status == 403 && problem.type == "urn:bluelibrary:problem:forbidden" && write?.isAccessRefusal == true)
        #expect(try await admin.list().items.count == 5)
        let manage = await #expect(throws: BlueLibraryClientError.self) { try await reader.keys() }
        #expect(manage?.status == 403)

        let me = try await reader.whoAmI()
        #expect(me.key?.id == created.id && me.key?.secret == nil && me.scopes == ["read"] && me.libraries == nil && me.locked)

        try await admin.deleteKey(id: created.id)
        let revoked = await #expect(throws: BlueLibraryClientError.self) { try await reader.list() }
        guard case .unauthorized? = revoked else {
            Issue.record("expected .unauthorized, got \(String(describing: revoked))")
            return
        }
        let gone = await #expect(throws: BlueLibraryClientError.self) { try await self.admin.key(id: created.id) }
        #expect(gone?.status == 404)
    }

    @Test func keysAreListedReadAndChangedFieldByField() async throws {
        let expiry = Date().addingTimeInterval(86_400).wholeMilliseconds
        let created = try await admin.createKey(name: "backup", scopes: [.read, .write], libraries: ["default"], expiresAt: expiry)
        #expect(created.scopes == ["read", "write"] && created.libraries == ["default"])
        #expect(created.expiresAt.map { abs($0.timeIntervalSince(expiry)) < 0.001 } == true)

        let listed = try await admin.keys()
        #expect(listed.map(\.id) == [created.id, "token"].sorted())
        #expect(listed.allSatisfy { $0.secret == nil })
        var stored = try await admin.key(id: created.id)
        #expect(stored.name == "backup" && stored.libraries == ["default"] && stored.secret == nil)

        // Only the fields given change.
        stored = try await admin.updateKey(id: created.id, name: "nightly backup")
        #expect(stored.name == "nightly backup" && stored.scopes == ["read", "write"] && stored.libraries == ["default"] && stored.expiresAt != nil)
        stored = try await admin.updateKey(id: created.id, scopes: [.read], libraries: .only(["default", "jazz"]))
        #expect(stored.scopes == ["read"] && stored.libraries == ["default", "jazz"] && stored.expiresAt != nil)
        // .all and .never clear the restriction and the expiry.
        stored = try await admin.updateKey(id: created.id, libraries: .all, expiresAt: .never)
        #expect(stored.libraries == nil && stored.expiresAt == nil && stored.name == "nightly backup")
        let later = Date().addingTimeInterval(3_600).wholeMilliseconds
        stored = try await admin.updateKey(id: created.id, expiresAt: .at(later))
        #expect(stored.expiresAt.map { abs($0.timeIntervalSince(later)) < 0.001 } == true)

        // Bad input is the server's 422, naming the field.
        let past = await #expect(throws: BlueLibraryClientError.self) {
            try await self.admin.createKey(name: "old", scopes: [.read], expiresAt: Date().addingTimeInterval(-60))
        }
        #expect(past?.status == 422 && past?.problem?.errors.map(\.field) == ["expiresAt"])
        let noScopes = await #expect(throws: BlueLibraryClientError.self) { try await self.admin.createKey(name: "none", scopes: []) }
        #expect(noScopes?.status == 422 && noScopes?.problem?.errors.map(\.field) == ["scopes"])
        let unknown = await #expect(throws: BlueLibraryClientError.self) { try await self.admin.updateKey(id: "bl_nothere", name: "x") }
        #expect(unknown?.status == 404)
    }

    @Test func aKeyForOneLibraryDoesNotSeeTheOthers() async throws {
        _ = try await admin.createLibrary(id: "jazz")
        let created = try await admin.createKey(name: "jazz only", scopes: [.write], libraries: ["jazz"])
        let secret = try #require(created.secret)
        let jazz = client(key: secret)
        let added = try await jazz.add(AlbumInput(title: "Kind of Blue", artist: "Miles Davis"), in: .library("jazz"))
        #expect(try await admin.library("jazz").albumCount == 1 && added.title == "Kind of Blue")
        let other = await #expect(throws: BlueLibraryClientError.self) { try await jazz.list() }
        #expect(other?.status == 404)
        #expect(try await jazz.libraries().map(\.id) == ["jazz"])
        let me = try await jazz.whoAmI()
        #expect(me.scopes == ["read", "write"] && me.libraries == ["jazz"])
    }

    @Test func theAdminTokenIsTheKeyTokenAndTheLastAdminKeyStays() async throws {
        let me = try await admin.whoAmI()
        #expect(me.key?.id == "token" && me.scopes == ["read", "write", "admin"] && me.libraries == nil && me.locked)
        let last = await #expect(throws: BlueLibraryClientError.self) { try await self.admin.deleteKey(id: "token") }
        #expect(last?.status == 409 && last?.problem?.type == "urn:bluelibrary:problem:last-admin-key")
        let narrowed = await #expect(throws: BlueLibraryClientError.self) { try await self.admin.updateKey(id: "token", scopes: [.read]) }
        #expect(narrowed?.status == 409)

        // Without a key, who-am-I answers what anyone may do (nothing: reads are protected);
        // a wrong key is refused, as anywhere.
        let anonymous = try await client(key: nil).whoAmI()
        #expect(anonymous.key == nil && anonymous.scopes.isEmpty && anonymous.locked)
        let wrong = await #expect(throws: BlueLibraryClientError.self) {
            try await self.client(key: "bl_aaaaaaaa_" + String(repeating: "A", count: 43)).whoAmI()
        }
        #expect(wrong?.status == 401)
    }

    @Test func theBlockingFaceDoesTheSame() throws {
        let created = try admin.createKey(name: "blocking", scopes: [.admin], libraries: ["default"])
        let secret = try #require(created.secret)
        #expect(try admin.key(id: created.id).name == "blocking")
        #expect(try admin.keys().count == 2)
        #expect(try client(key: secret).whoAmI().libraries == ["default"])
        #expect(try admin.updateKey(id: created.id, libraries: .all).libraries == nil)
        try admin.deleteKey(id: created.id)
        #expect(try admin.keys().map(\.id) == ["token"])
    }
}

extension Date {
    /// This time cut to whole milliseconds, as the server keeps it.
    fileprivate var wholeMilliseconds: Date {
        Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }
}
