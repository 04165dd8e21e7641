/// An error from a collaborator (the store, an output stream) carried inside `LibraryError`.
///
/// The original error is kept for the server's log; equality compares descriptions only, so
/// `LibraryError` stays `Equatable` for tests. Its text is for logs, never for responses: it
/// may contain SQL or paths.
public struct UnderlyingError: Sendable, Equatable, CustomStringConvertible {
    public let error: any Error

    public init(_ error: any Error) {
        self.error = error
    }

    public var description: String { String(describing: error) }

    public static func == (lhs: UnderlyingError, rhs: UnderlyingError) -> Bool {
        lhs.description == rhs.description
    }
}
