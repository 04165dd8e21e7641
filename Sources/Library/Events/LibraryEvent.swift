/// A change to a library, announced after it is committed (the tutorial's notifications).
///
/// `version` is the library version the change produced, so a subscriber can tell whether it
/// already saw it (SSE `Last-Event-ID`, the change feed).
public enum LibraryEvent: Sendable, Equatable {
    case albumAdded(id: AlbumID, index: Int, version: Int64)
    case albumUpdated(id: AlbumID, index: Int, version: Int64)
    case albumDeleted(id: AlbumID, index: Int, version: Int64)
    case albumMoved(id: AlbumID, from: Int, to: Int, version: Int64)
    /// An album arrived at `index` from library `from` (a move between libraries); announced
    /// as `album.added` with `movedFrom`.
    case albumMovedIn(id: AlbumID, index: Int, from: LibraryID, version: Int64)
    /// An album left `index` for library `to`; announced as `album.deleted` with `movedTo`.
    case albumMovedOut(id: AlbumID, index: Int, to: LibraryID, version: Int64)
    /// The whole library was replaced (archive import) or created (seeding).
    case libraryReplaced(version: Int64)
    /// A client's saved state changed; `version` is the library version it refers to
    /// (saving a state does not bump it).
    case stateChanged(client: String, index: Int, albumID: AlbumID?, version: Int64)

    /// The SSE event name (`album.added`, `library.replaced`, ...).
    public var name: String {
        switch self {
        case .albumAdded, .albumMovedIn: "album.added"
        case .albumUpdated: "album.updated"
        case .albumDeleted, .albumMovedOut: "album.deleted"
        case .albumMoved: "album.moved"
        case .libraryReplaced: "library.replaced"
        case .stateChanged: "state.changed"
        }
    }

    public var version: Int64 {
        switch self {
        case .albumAdded(_, _, let version), .albumUpdated(_, _, let version), .albumDeleted(_, _, let version),
             .albumMoved(_, _, _, let version), .albumMovedIn(_, _, _, let version), .albumMovedOut(_, _, _, let version),
             .libraryReplaced(let version), .stateChanged(_, _, _, let version):
            version
        }
    }
}

extension LibraryEvent {
    /// The event that announced `change` when it was committed: the change feed holds every
    /// versioned event, so an instance that did not make a change publishes the same event
    /// from the feed (same name, data and id on every instance). `state.changed` is not in the
    /// feed and never comes from here. Nil for a damaged album change without album or index.
    public init?(_ change: LibraryChange) {
        let version = change.version
        if change.kind == .replaced {
            self = .libraryReplaced(version: version)
            return
        }
        guard let id = change.id, let index = change.index else { return nil }
        switch change.kind {
        case .added:
            self = change.peer.map { .albumMovedIn(id: id, index: index, from: $0, version: version) }
                ?? .albumAdded(id: id, index: index, version: version)
        case .updated:
            self = .albumUpdated(id: id, index: index, version: version)
        case .deleted:
            self = change.peer.map { .albumMovedOut(id: id, index: index, to: $0, version: version) }
                ?? .albumDeleted(id: id, index: index, version: version)
        case .moved:
            self = .albumMoved(id: id, from: change.fromIndex ?? index, to: index, version: version)
        case .replaced:
            self = .libraryReplaced(version: version)
        }
    }
}

/// Where the facade announces changes (the SSE hub, later). Called after commit, on the
/// caller's thread: implementations must return quickly and must not call back into the facade
/// synchronously.
public protocol LibraryEventSink: Sendable {
    func publish(_ event: LibraryEvent)
}
