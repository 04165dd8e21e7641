/// The name of one album library.
///
/// There is only `default` for now; the type exists so that every store call already says
/// which library it means, and `/libraries/{lib}/...` can arrive later without changing the
/// store protocol.
public struct LibraryID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The library every route uses until several libraries exist.
    public static let `default` = LibraryID(rawValue: "default")

    public var description: String { rawValue }
}
