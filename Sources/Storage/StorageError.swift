/// An integrity problem the store detected itself (as opposed to a `SQLiteError` from SQLite).
///
/// The facade only calls the store with arguments it has checked, so these mean a bug or a
/// damaged database; they surface as `LibraryError.storage`.
public struct StorageError: Error, CustomStringConvertible, Equatable, Sendable {
    public enum Kind: Sendable, Equatable {
        /// An index outside `0..<count` (`0...count` for inserts).
        case indexOutOfRange
        /// No album with the given id in the library.
        case albumNotFound
        /// An album with the given id is already in the library.
        case duplicateAlbum
        /// Stored data breaks an invariant (bucket sizes, counts, undecodable values).
        case corrupt
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "storage error (\(kind)): \(message)" }
}
