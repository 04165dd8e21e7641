import Foundation

/// One entry of the change feed: what one committed mutation did to the album list.
///
/// Every mutation bumps the library version exactly once and produces exactly one change, so
/// the versions in the feed are consecutive (until the oldest are pruned): a client that has
/// applied every change up to `since` and then each change after it has the library as it is.
public struct LibraryChange: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        case added, updated, deleted, moved
        /// The whole library was replaced (archive import, seeding): reload everything.
        case replaced
    }

    /// The library version this change produced.
    public var version: Int64
    public var kind: Kind
    /// The album concerned; `nil` for `.replaced`.
    public var id: AlbumID?
    /// The album's index after the change (for `.deleted`: the index it had); `nil` for `.replaced`.
    public var index: Int?
    /// For `.moved`: the index the album had before the move (cursor walks replay moves).
    public var fromIndex: Int?
    /// For an album moved between libraries: the other library. An `.added` change with a peer
    /// is the album arriving from that library; a `.deleted` one, the album leaving for it.
    public var peer: LibraryID?
    /// When the change was committed (retention is measured from it).
    public var recordedAt: Date

    public init(version: Int64, kind: Kind, id: AlbumID?, index: Int?, fromIndex: Int? = nil, peer: LibraryID? = nil,
                recordedAt: Date) {
        self.version = version
        self.kind = kind
        self.id = id
        self.index = index
        self.fromIndex = fromIndex
        self.peer = peer
        self.recordedAt = recordedAt
    }

    /// The change an event announces, or `nil` for events that change no album list
    /// (`stateChanged`).
    init?(_ event: LibraryEvent, recordedAt: Date) {
        switch event {
        case let .albumAdded(id, index, version):
            self.init(version: version, kind: .added, id: id, index: index, recordedAt: recordedAt)
        case let .albumUpdated(id, index, version):
            self.init(version: version, kind: .updated, id: id, index: index, recordedAt: recordedAt)
        case let .albumDeleted(id, index, version):
            self.init(version: version, kind: .deleted, id: id, index: index, recordedAt: recordedAt)
        case let .albumMoved(id, from, to, version):
            self.init(version: version, kind: .moved, id: id, index: to, fromIndex: from, recordedAt: recordedAt)
        case let .albumMovedIn(id, index, source, version):
            self.init(version: version, kind: .added, id: id, index: index, peer: source, recordedAt: recordedAt)
        case let .albumMovedOut(id, index, target, version):
            self.init(version: version, kind: .deleted, id: id, index: index, peer: target, recordedAt: recordedAt)
        case let .libraryReplaced(version):
            self.init(version: version, kind: .replaced, id: nil, index: nil, recordedAt: recordedAt)
        case .stateChanged:
            return nil
        }
    }
}

/// How long changes are kept: a change is pruned only once it is **both** older than `age`
/// **and** not among the newest `count` changes ("at least 30 days or the last 100,000
/// changes, whichever keeps more").
public struct ChangeRetention: Sendable, Equatable {
    public var age: Duration
    public var count: Int
    /// At most this many changes are pruned per write, so a write's extra work is bounded; as
    /// each write adds one change, any backlog is still worked off.
    public var prunePerWrite: Int

    public init(age: Duration = .seconds(30 * 24 * 3600), count: Int = 100_000, prunePerWrite: Int = 16) {
        precondition(count >= 0 && prunePerWrite >= 1, "retention count must be >= 0 and prunePerWrite >= 1")
        self.age = age
        self.count = count
        self.prunePerWrite = prunePerWrite
    }

    public static let `default` = ChangeRetention()
}

/// One page of the change feed.
public struct ChangePage: Sendable, Equatable {
    /// Changes after `since`, oldest first.
    public var changes: [LibraryChange]
    /// The `since` for the next request: the version of the last change here, or the request's
    /// `since` when there was none.
    public var next: Int64
    /// Whether more changes follow `next` already.
    public var more: Bool

    public init(changes: [LibraryChange], next: Int64, more: Bool) {
        self.changes = changes
        self.next = next
        self.more = more
    }
}
