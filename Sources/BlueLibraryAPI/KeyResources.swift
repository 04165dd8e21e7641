import Foundation

/// One API key as `GET /keys` shows it: `{"id":"bl_k3v9q2xa","name":"backup","scopes":["read"],
/// "libraries":["jazz"],"expiresAt":null,"createdAt":"..."}`. `secret` is there only in the
/// answer of `POST /keys`: the whole key to send as `Authorization: Bearer <secret>`, shown once.
public struct KeyResource: Codable, Sendable, Hashable, Identifiable {
    /// `bl_` and 8 characters (the key's first 11 characters), or `token` for the passcode of
    /// earlier versions.
    public var id: String
    public var name: String
    /// `read`, `write`, `admin`: each includes the ones before it.
    public var scopes: [String]
    /// The libraries the key may use; nil for all of them.
    public var libraries: [String]?
    public var expiresAt: Date?
    public var createdAt: Date
    public var secret: String?

    public init(id: String, name: String, scopes: [String], libraries: [String]? = nil, expiresAt: Date? = nil,
                createdAt: Date, secret: String? = nil) {
        self.id = id
        self.name = name
        self.scopes = scopes
        self.libraries = libraries
        self.expiresAt = expiresAt
        self.createdAt = createdAt
        self.secret = secret
    }

    enum CodingKeys: String, CodingKey { case id, name, scopes, libraries, expiresAt, createdAt, secret }

    /// `libraries` and `expiresAt` are written as `null` when absent (they mean "all" and
    /// "never"); `secret` only when there is one.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(scopes, forKey: .scopes)
        try container.encode(libraries, forKey: .libraries)
        try container.encode(expiresAt, forKey: .expiresAt)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encodeIfPresent(secret, forKey: .secret)
    }
}

/// `GET /keys`: `{"keys": [...]}`, ordered by id.
public struct KeyListResource: Codable, Sendable, Hashable {
    public var keys: [KeyResource]

    public init(keys: [KeyResource]) { self.keys = keys }
}

/// `GET /keys/self`: who the server takes the caller for. `key` is nil without a key (or on a
/// server whose lock is off); `scopes` and `libraries` are what the caller may do now.
public struct KeySelfResource: Codable, Sendable, Hashable {
    public var key: KeyResource?
    public var scopes: [String]
    /// nil: every library.
    public var libraries: [String]?
    /// Whether the server's lock is on (`access.passcodeEnabled`).
    public var locked: Bool

    public init(key: KeyResource?, scopes: [String], libraries: [String]?, locked: Bool) {
        self.key = key
        self.scopes = scopes
        self.libraries = libraries
        self.locked = locked
    }

    enum CodingKeys: String, CodingKey { case key, scopes, libraries, locked }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(key, forKey: .key)
        try container.encode(scopes, forKey: .scopes)
        try container.encode(libraries, forKey: .libraries)
        try container.encode(locked, forKey: .locked)
    }
}
