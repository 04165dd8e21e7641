import Foundation

/// An API key as the server keeps it: who it is for, what it may do, where, until when, and
/// the hash of its secret (never the secret).
///
/// Keys the server makes hold 256 random bits and are hashed with SHA-256 (`TokenHash.sha256`);
/// the passcode of earlier versions, chosen by a person, stays a PBKDF2 hash under the id
/// ``AccessKey/tokenID``.
public struct AccessKey: Sendable, Equatable {
    /// What a key may do. Each includes the ones before it: `admin` may write and read,
    /// `write` may read.
    public enum Scope: String, Sendable, CaseIterable, Comparable, Codable {
        /// Lists, albums, covers, events, changes, saved states, exports.
        case read
        /// Album changes, undo, saved states, imports into a library.
        case write
        /// Settings, libraries, views, keys, replacing a library's archive.
        case admin

        private var rank: Int {
            switch self {
            case .read: 0
            case .write: 1
            case .admin: 2
            }
        }

        public static func < (lhs: Scope, rhs: Scope) -> Bool { lhs.rank < rhs.rank }
    }

    /// The id of the key that was the write-protection token before keys existed (set with
    /// `bluelibrary token set` or `BLUELIBRARY_TOKEN`): an admin key for every library.
    public static let tokenID = "token"

    /// The public id, also the key's prefix (`bl_` and 8 characters), or ``tokenID``.
    public var id: String
    public var name: String
    /// As given (sorted); ``allows(_:)`` applies the inclusion.
    public var scopes: [Scope]
    /// The library ids the key may use, nil for all of them.
    public var libraries: [String]?
    public var expiresAt: Date?
    public var createdAt: Date
    public var secret: TokenHash

    public init(id: String, name: String, scopes: [Scope], libraries: [String]? = nil, expiresAt: Date? = nil,
                createdAt: Date, secret: TokenHash) {
        self.id = id
        self.name = name
        self.scopes = Array(Set(scopes)).sorted()
        self.libraries = libraries
        self.expiresAt = expiresAt
        self.createdAt = createdAt
        self.secret = secret
    }

    /// The strongest scope the key holds.
    public var level: Scope? { scopes.max() }

    /// Whether the key holds `scope` or one that includes it.
    public func allows(_ scope: Scope) -> Bool { level.map { $0 >= scope } ?? false }

    /// Whether the key may use the library `id`.
    public func allows(library id: String) -> Bool { libraries?.contains(id) ?? true }

    /// Whether the key has expired at `now`.
    public func isExpired(at now: Date) -> Bool { expiresAt.map { $0 <= now } ?? false }
}
