import BlueLibraryAPI
import Foundation

// What a client sends about API keys (`KeyResource` and `KeySelfResource`, what the server
// sends, are the wire module's).

/// What a key may do. Each includes the ones before it: `admin` may write and read, `write`
/// may read.
public enum KeyScope: String, Sendable, Hashable, CaseIterable, Codable {
    /// Lists, albums, covers, events, changes, saved states, exports.
    case read
    /// Album changes, undo, saved states, imports into a library.
    case write
    /// Settings, libraries, views, keys, replacing a library's archive.
    case admin
}

/// `PATCH /keys/{id}`: which libraries the key may use from now on.
public enum KeyLibraries: Sendable, Hashable {
    /// Every library (sent as `null`: clears a restriction).
    case all
    /// Only these library ids (1 to 32).
    case only([String])
}

/// `PATCH /keys/{id}`: until when the key works from now on.
public enum KeyExpiry: Sendable, Hashable {
    /// It never expires (sent as `null`: clears an expiry).
    case never
    /// It stops working at this time (which must be in the future).
    case at(Date)
}

/// `POST /keys`: `name` and `scopes` always, `libraries` and `expiresAt` when given (absent:
/// every library, never expires).
struct KeyCreation: Encodable {
    var name: String
    var scopes: [KeyScope]
    var libraries: [String]?
    var expiresAt: Date?

    enum CodingKeys: String, CodingKey { case name, scopes, libraries, expiresAt }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(scopes, forKey: .scopes)
        try container.encodeIfPresent(libraries, forKey: .libraries)
        try container.encodeIfPresent(expiresAt.map(KeyTime.format), forKey: .expiresAt)
    }
}

/// `PATCH /keys/{id}`: only the fields given; `.all` and `.never` are sent as `null`.
struct KeyChange: Encodable {
    var name: String?
    var scopes: [KeyScope]?
    var libraries: KeyLibraries?
    var expiresAt: KeyExpiry?

    enum CodingKeys: String, CodingKey { case name, scopes, libraries, expiresAt }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encodeIfPresent(scopes, forKey: .scopes)
        switch libraries {
        case nil: break
        case .all: try container.encodeNil(forKey: .libraries)
        case let .only(ids): try container.encode(ids, forKey: .libraries)
        }
        switch expiresAt {
        case nil: break
        case .never: try container.encodeNil(forKey: .expiresAt)
        case let .at(date): try container.encode(KeyTime.format(date), forKey: .expiresAt)
        }
    }
}

/// The RFC 3339 times of the keys' wire format (`expiresAt`, `createdAt`).
enum KeyTime {
    /// UTC with milliseconds, as the server writes them: `2027-01-01T00:00:00.000Z`.
    static func format(_ date: Date) -> String {
        WireDate.format(date)
    }

    /// A decoder that reads the keys' RFC 3339 times into `Date`s.
    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = WireDate.parse(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 time: \(text.prefix(40))")
            }
            return date
        }
        return decoder
    }
}
