/// A local mutation as the outbox keeps it: by album id (a local add's id until the server
/// gives it its own), so it can be replayed on a newer server state.
public enum ReplicaOperation: Codable, Sendable, Hashable {
    /// Add `input` at `index` (nil: append); `localID` is the id the replica gave it,
    /// `createdAt` when it was made (shown until the server's own album replaces it).
    case add(localID: String, input: AlbumInput, index: Int?, createdAt: String)
    case delete(id: String)
    case move(id: String, index: Int)
    case update(id: String, patch: AlbumPatchInput)

    /// The album it concerns.
    public var albumID: String {
        switch self {
        case let .add(id, _, _, _), let .delete(id), let .move(id, _), let .update(id, _): id
        }
    }

    /// The same operation on album `id`.
    func renamed(to id: String) -> ReplicaOperation {
        switch self {
        case let .add(_, input, index, createdAt): .add(localID: id, input: input, index: index, createdAt: createdAt)
        case .delete: .delete(id: id)
        case let .move(_, index): .move(id: id, index: index)
        case let .update(_, patch): .update(id: id, patch: patch)
        }
    }

    /// `add`, `delete`, `move` or `update`, for reports.
    public var kind: String {
        switch self {
        case .add: "add"
        case .delete: "delete"
        case .move: "move"
        case .update: "update"
        }
    }
}

extension ReplicaOperation {
    /// The album a local add shows until it is pushed.
    static func localAlbum(id: String, input: AlbumInput, createdAt: String) -> AlbumResource {
        AlbumResource(id: id, title: input.title, artist: input.artist, genre: input.genre ?? "Pop", year: input.year,
                      coverUrl: input.coverUrl, createdAt: createdAt, updatedAt: createdAt)
    }
}
