/// The boundary replay of an exact walk in position order: given where a walk stood when its
/// last page was read (``WalkMark``) and every change each source recorded since, where it
/// stands now and which albums are on the wrong side of its boundary. Pure: no store.
///
/// Terms (walk order: the sources in view order, each in its own order; a descending
/// position walk reverses both, and the replay works in those reversed coordinates):
/// - An album is **behind** when it is in a source before the current source `k`, or in `k`
///   at an index before the boundary `b`; the walk has passed it. Otherwise it is **ahead**.
/// - An album is **seen** when the walk has shown it or passed it. For an album nothing
///   happened to, seen == behind; the exceptions are the albums where they differ.
///
/// Rules:
/// - Replaying a source's changes moves `b` (only in source `k`): an insert at `i < b` makes
///   `b + 1`, a delete at `i < b` makes `b - 1`; a move is a delete then an insert (its `to`
///   is an index in the list without the album). An insert at exactly `b` is ahead.
/// - Nothing is shown between pages, so an album's seen flag is constant over the interval:
///   its exception flag if it has one, else whether it was behind when the page was read,
///   which is where it was at its first change in the source it was in (that change is not
///   an add). An album whose first change in every source is an add was not in the list: it
///   is never an exception, so it is shown iff it is ahead (it "lands" behind or ahead).
/// - Others' changes never change whether an album is behind, so an album nothing happened
///   to keeps its exception (if any) as it is; a touched album gets one iff seen != behind
///   at its last change (its source and side then are its source and side now).
/// - More than ``WalkMark/maxExceptions`` exceptions → `.walkExpired`.
struct WalkReplay {
    private(set) var source: Int
    private(set) var boundary: Int
    /// The album just before the boundary, while it is known to be (see `WalkMark.anchor`).
    private(set) var anchor: AlbumID?
    private let exceptions: [AlbumID: WalkException]
    /// Per touched album: seen when the last page was read (nil: not known from a change),
    /// and where it is now (nil: in no source of the list).
    private var seenAtStart: [AlbumID: Bool] = [:]
    private var now: [AlbumID: (source: Int, behind: Bool)] = [:]
    private var touched: Set<AlbumID> = []

    init(_ mark: WalkMark) {
        source = mark.source
        boundary = mark.boundary
        anchor = mark.anchor
        var exceptions: [AlbumID: WalkException] = [:]
        for exception in mark.exceptions { exceptions[exception.id] = exception }
        self.exceptions = exceptions
    }

    /// Replays the changes of walk source `walkSource` after the mark's version, oldest first.
    ///
    /// - Parameters:
    ///   - countNow: the source's album count after the last of `changes` (needed to turn
    ///     indexes into reversed coordinates).
    ///   - reversed: whether the walk reads this source last to first.
    /// - Throws: `.walkExpired` for a change that cannot be replayed (`.replaced`, or a move
    ///   recorded without its old index).
    mutating func replay(walkSource: Int, changes: [LibraryChange], countNow: Int, reversed: Bool) throws(LibraryError) {
        var count = countNow
        for change in changes {
            switch change.kind {
            case .added: count -= 1
            case .deleted: count += 1
            case .moved, .updated, .replaced: break
            }
        }
        var present: [AlbumID: Bool] = [:]  // behind, for albums of this source touched so far
        var absent: Set<AlbumID> = []
        func behind(_ index: Int) -> Bool {
            walkSource < source || (walkSource == source && index < boundary)
        }
        for change in changes {
            guard change.kind != .replaced, let id = change.id, let index = change.index else {
                throw .walkExpired("a source of this list was replaced (archive import) since the last page; start again")
            }
            let first = present[id] == nil && !absent.contains(id)
            if walkSource == source, id == anchor, change.kind != .updated { anchor = nil }
            touched.insert(id)
            // Index conversions: `size` is the list's length when the index is meant.
            func position(_ index: Int, size: Int) -> Int { reversed ? size - 1 - index : index }
            func remove(_ at: Int) {
                if first { seenAtStart[id] = behind(at) }
                if walkSource == source && at < boundary { boundary -= 1 }
                count -= 1
                present[id] = nil
                absent.insert(id)
            }
            func insert(_ at: Int) {
                present[id] = behind(at)
                absent.remove(id)
                if walkSource == source && at < boundary { boundary += 1 }
                count += 1
            }
            switch change.kind {
            case .added:
                // In the list with the album: `count + 1` long.
                insert(position(index, size: count + 1))
            case .deleted:
                remove(position(index, size: count))
            case .updated:
                let at = position(index, size: count)
                if first { seenAtStart[id] = behind(at) }
                present[id] = behind(at)
            case .moved:
                guard let from = change.fromIndex else {
                    throw .walkExpired("the change feed holds a move without its old index (recorded by an older server); start again")
                }
                remove(position(from, size: count))
                insert(position(index, size: count + 1))
            case .replaced:
                break
            }
        }
        for (id, isBehind) in present { now[id] = (walkSource, isBehind) }
    }

    /// The exceptions after the replay.
    /// - Throws: `.walkExpired` when more than ``WalkMark/maxExceptions`` albums are on the
    ///   wrong side.
    func exceptionsNow() throws(LibraryError) -> [WalkException] {
        var result: [WalkException] = []
        for (id, exception) in exceptions where !touched.contains(id) { result.append(exception) }
        for id in touched {
            guard let place = now[id] else { continue }
            // An album that was in no source of the list (added, or moved in from outside) is
            // taken as seen iff it landed behind: it appears iff it lands ahead.
            let seen = exceptions[id]?.seen ?? seenAtStart[id] ?? place.behind
            if seen != place.behind { result.append(WalkException(id: id, seen: seen, source: place.source)) }
        }
        guard result.count <= WalkMark.maxExceptions else {
            throw .walkExpired(
                "more than \(WalkMark.maxExceptions) albums were moved across this walk's position since the last page; start again")
        }
        return result.sorted { ($0.source, $0.id.rawValue) < ($1.source, $1.id.rawValue) }
    }
}
