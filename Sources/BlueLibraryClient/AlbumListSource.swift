/// Which album list a call reads or changes: one library's own list, or a composite view that
/// pages over several libraries as one list (`/views/{view}/albums`).
///
/// A string literal is a library: `client.list(query, in: "jazz")`. The default library uses
/// the routes without a prefix (`/albums`, `/undo`, ...), so every call that does not name a
/// source sends exactly what it sent before libraries existed; any other library uses the
/// `/libraries/{id}/...` routes, a view the `/views/{id}/...` ones.
///
/// A view only has the list routes (the page, `albums/at/{index}` and adding at an index):
/// calls that exist only for a library (by album id, moves, undo, state) take a library id.
public enum AlbumListSource: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// A library by id (`[a-z0-9-]{1,40}`).
    case library(String)
    /// A composite view by id (the same rules).
    case view(String)

    /// The library every server has and that the unprefixed routes mean.
    public static let defaultLibraryID = "default"
    /// `.library("default")`: what every call uses unless told otherwise.
    public static let defaultLibrary = AlbumListSource.library(defaultLibraryID)

    public init(stringLiteral value: String) { self = .library(value) }

    /// The path segments that come before `albums` (and `undo`, `state`, ...): none for the
    /// default library, `libraries/{id}` for another one, `views/{id}` for a view.
    var pathPrefix: [String] {
        switch self {
        case let .library(id): id == Self.defaultLibraryID ? [] : ["libraries", id]
        case let .view(id): ["views", id]
        }
    }

    /// `library jazz` or `view everything`, for messages.
    public var description: String {
        switch self {
        case let .library(id): "library \(id)"
        case let .view(id): "view \(id)"
        }
    }
}
