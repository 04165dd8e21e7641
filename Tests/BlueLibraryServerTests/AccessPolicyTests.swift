import Foundation
import Library
import ServerRecords
import TestThreads
import Testing

@testable import BlueLibraryServer

/// The verdicts of the access table for each kind of grant, without a server.
@Suite(.ownThreads)
struct AccessPolicyTests {
    static func key(_ scopes: [AccessKey.Scope], libraries: [String]? = nil) -> AccessGrant {
        .key(AccessKey(id: "bl_abcdefgh", name: "k", scopes: scopes, libraries: libraries, createdAt: Date(),
                       secret: TokenHash(algorithm: TokenHash.sha256, salt: [], hash: [], iterations: 1)))
    }

    @Test func scopesIncludeTheOnesBeforeThem() {
        #expect(Self.key([.admin]).allows(.read) && Self.key([.admin]).allows(.write))
        #expect(Self.key([.write]).allows(.read) && !Self.key([.write]).allows(.admin))
        #expect(!Self.key([.read]).allows(.write))
        #expect(AccessGrant.everyone.allows(.admin))
        #expect(AccessGrant.anonymous(readsOpen: true).allows(.read) && !AccessGrant.anonymous(readsOpen: true).allows(.write))
        #expect(!AccessGrant.anonymous(readsOpen: false).allows(.read))
    }

    @Test func librariesAreHiddenServerRoutesForbiddenViewsMixedForbidden() {
        let jazz = Self.key([.admin], libraries: ["jazz"])
        let library = AccessRule.write(.library)
        #expect(AccessPolicy.verdict(library, grant: jazz, libraries: [LibraryID(rawValue: "jazz")]) == .allowed)
        #expect(AccessPolicy.verdict(library, grant: jazz, libraries: [.default]) == .hidden)
        #expect(AccessPolicy.verdict(library, grant: jazz, libraries: [LibraryID(rawValue: "jazz"), .default]) == .hidden)
        if case .forbidden = AccessPolicy.verdict(.admin(.server), grant: jazz, libraries: []) {} else { Issue.record("server route") }
        #expect(AccessPolicy.verdict(.read(.listing), grant: jazz, libraries: []) == .allowed)
        let view = AccessRule.read(.view)
        #expect(AccessPolicy.verdict(view, grant: jazz, libraries: [LibraryID(rawValue: "jazz")]) == .allowed)
        #expect(AccessPolicy.verdict(view, grant: jazz, libraries: [.default]) == .hidden)
        if case .forbidden = AccessPolicy.verdict(view, grant: jazz, libraries: [LibraryID(rawValue: "jazz"), .default]) {} else {
            Issue.record("a view mixing allowed and forbidden sources is 403")
        }
        #expect(AccessPolicy.verdict(library, grant: .anonymous(readsOpen: true), libraries: [.default]) == .keyRequired)
        if case .forbidden = AccessPolicy.verdict(library, grant: Self.key([.read]), libraries: [.default]) {} else { Issue.record("scope") }
    }

    @Test func openPathsAreOpenForReadsOnlyAndUnknownRoutesNeedAKey() {
        #expect(AccessPolicy.rule(method: .get, path: "/healthz", pattern: "/healthz") == nil)
        #expect(AccessPolicy.rule(method: .post, path: "/app/", pattern: nil) == .write(.library))
        #expect(AccessPolicy.rule(method: .head, path: "/albums", pattern: "/albums") == .read(.library))
        #expect(AccessPolicy.rule(method: .get, path: "/apple", pattern: nil) == .read(.library))
    }
}
