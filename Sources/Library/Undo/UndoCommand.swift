/// The inverse of one mutation, recorded when the mutation happens (the tutorial's
/// `NSInvocation` on the undo stack, as data so it can be stored and survive restarts).
///
/// Each case holds everything needed to put the library back exactly as it was, album
/// fields and timestamps included:
/// - a delete records `reinsert` of the whole album at its old index;
/// - an add records `remove` of the new id;
/// - a move records `move` back to the old index;
/// - an update records `restore` of the previous album;
/// - a move to another library records `moveBack` on the **source** library's stack: the
///   album is now in `library`, and undoing moves it from there back to `index` here (one
///   transaction over both libraries; the other library's stack gets nothing);
/// - a batch of several changes records `batch` of their inverses, in the order the changes
///   were made; undoing applies them newest first, all or none.
///
/// Coding: `{"kind": "reinsert", "album": {...}, "index": 0}`, `{"kind": "moveBack", "id": ...,
/// "title": ..., "library": "jazz", "index": 3}` and so on; a stable, explicit shape because
/// the store keeps these as JSON across versions of the server.
public enum UndoCommand: Sendable, Equatable, Codable {
    case reinsert(album: Album, index: Int)
    case remove(id: AlbumID, title: String)
    case move(id: AlbumID, title: String, index: Int)
    case restore(album: Album)
    case moveBack(id: AlbumID, title: String, library: LibraryID, index: Int)
    case batch([UndoCommand])

    /// What undoing will do, for people: "re-insert 'Best of Bowie' at index 0".
    public var summary: String {
        switch self {
        case .reinsert(let album, let index): "re-insert '\(album.title)' at index \(index)"
        case .remove(_, let title): "remove the added album '\(title)'"
        case .move(_, let title, let index): "move '\(title)' back to index \(index)"
        case .restore(let album): "restore the previous fields of '\(album.title)'"
        case .moveBack(_, let title, let library, let index): "move '\(title)' back from library \(library) to index \(index)"
        case .batch(let commands): "take back a batch of \(commands.count) changes"
        }
    }

    private enum Kind: String, Codable {
        case reinsert, remove, move, restore, moveBack, batch
    }

    private enum CodingKeys: String, CodingKey {
        case kind, album, id, title, index, library, commands
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(Kind.self, forKey: .kind) {
        case .reinsert:
            self = .reinsert(
                album: try container.decode(Album.self, forKey: .album),
                index: try container.decode(Int.self, forKey: .index))
        case .remove:
            self = .remove(
                id: try container.decode(AlbumID.self, forKey: .id),
                title: try container.decode(String.self, forKey: .title))
        case .move:
            self = .move(
                id: try container.decode(AlbumID.self, forKey: .id),
                title: try container.decode(String.self, forKey: .title),
                index: try container.decode(Int.self, forKey: .index))
        case .restore:
            self = .restore(album: try container.decode(Album.self, forKey: .album))
        case .moveBack:
            self = .moveBack(
                id: try container.decode(AlbumID.self, forKey: .id),
                title: try container.decode(String.self, forKey: .title),
                library: try container.decode(LibraryID.self, forKey: .library),
                index: try container.decode(Int.self, forKey: .index))
        case .batch:
            self = .batch(try container.decode([UndoCommand].self, forKey: .commands))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .reinsert(let album, let index):
            try container.encode(Kind.reinsert, forKey: .kind)
            try container.encode(album, forKey: .album)
            try container.encode(index, forKey: .index)
        case .remove(let id, let title):
            try container.encode(Kind.remove, forKey: .kind)
            try container.encode(id, forKey: .id)
            try container.encode(title, forKey: .title)
        case .move(let id, let title, let index):
            try container.encode(Kind.move, forKey: .kind)
            try container.encode(id, forKey: .id)
            try container.encode(title, forKey: .title)
            try container.encode(index, forKey: .index)
        case .restore(let album):
            try container.encode(Kind.restore, forKey: .kind)
            try container.encode(album, forKey: .album)
        case .moveBack(let id, let title, let library, let index):
            try container.encode(Kind.moveBack, forKey: .kind)
            try container.encode(id, forKey: .id)
            try container.encode(title, forKey: .title)
            try container.encode(library, forKey: .library)
            try container.encode(index, forKey: .index)
        case .batch(let commands):
            try container.encode(Kind.batch, forKey: .kind)
            try container.encode(commands, forKey: .commands)
        }
    }
}
