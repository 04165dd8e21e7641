/// One library's logged operations set against its change feed: which operations took effect
/// and with which version (an ambiguous one is looked for in the feed; an add by its title in
/// the final list, since nobody else knows its id), every way the feed and the acknowledged
/// writes disagree, and the history for ``VersionHistory``.
///
/// Each client adds, moves and deletes only its own albums, so every change in the feed
/// belongs to one client: an add or delete by the album id, the moves of an album in the order
/// its owner sent them (a move to the index the album already had commits nothing, so an
/// acknowledged move may have no change: then the album must have been at that index at some
/// version between the client's neighbouring writes).
struct FailoverHistory {
    var problems: [String] = []
    var history: VersionHistory
    /// Writes that took effect although their answer was ambiguous, and ambiguous ones that did not.
    var ambiguousApplied = 0
    var ambiguousNotApplied = 0
    var acknowledgedWrites = 0

    /// - Parameters:
    ///   - operations: every operation of the library's clients (each client's in the order sent).
    ///   - initial: the order and version before the load.
    ///   - feed: the changes after `initial.version`.
    ///   - final: the albums (id, title) in order after the load, and the version read with them.
    init(operations: [LoggedOperation], initial: (ids: [String], version: Int64), feed: [LibraryProbe.Change],
         final: (albums: [(id: String, title: String)], version: Int64)) {
        let v0 = initial.version
        history = VersionHistory(initialVersion: v0, operations: [])
        // Versions v0 + 1 ... final, each once, and the feed replays onto the final order.
        if feed.map(\.version) != Array(stride(from: v0 + 1, through: final.version, by: 1)) {
            problems.append("the feed's versions are not \(v0 + 1)...\(final.version) without a gap or a repeat: \(feed.map(\.version))")
        }
        var states = [initial.ids]
        for change in feed {
            let step = LibraryProbe.replay([change], on: states[states.count - 1])
            problems += step.misfits
            states.append(step.ids)
        }
        if states.last! != final.albums.map(\.id) { problems.append("the feed replayed does not give the final order") }
        /// The order at version `version` (clamped to the feed).
        func state(at version: Int64) -> [String] { states[Int(min(max(version - v0, 0), Int64(states.count - 1)))] }

        var addOf: [String: LibraryProbe.Change] = [:], deleteOf: [String: LibraryProbe.Change] = [:]
        var movesOf: [String: [LibraryProbe.Change]] = [:]
        for change in feed {
            guard let id = change.id else { continue }
            switch change.kind {
            case "added" where addOf[id] == nil: addOf[id] = change
            case "deleted" where deleteOf[id] == nil: deleteOf[id] = change
            case "moved": movesOf[id, default: []].append(change)
            default: problems.append("\(change): unexpected, or a second change of its kind for that album")
            }
        }
        let idsByTitle = Dictionary(grouping: final.albums, by: \.title)
        for (title, albums) in idsByTitle where albums.count > 1 { problems.append("\"\(title)\" is there \(albums.count) times") }

        var explained = Set<Int64>()
        // The version each operation took effect with (by its position in `operations`).
        var versionOf: [Int: Int64] = [:]
        var movesByAlbum: [String: [Int]] = [:]
        for (position, operation) in operations.enumerated() where operation.outcome != .refused {
            let acknowledged = operation.outcome == .acknowledged
            switch operation.kind {
            case .read:
                continue
            case .add, .delete:
                let id = operation.albumID ?? operation.title.flatMap { idsByTitle[$0]?.first?.id }
                let change = id.flatMap { operation.kind == .add ? addOf[$0] : deleteOf[$0] }
                if let change {
                    versionOf[position] = change.version
                    explained.insert(change.version)
                } else if acknowledged {
                    problems.append("\(operation): acknowledged but not in the change feed")
                } else if operation.kind == .add, id != nil {
                    problems.append("\(operation): its album is there but its add is not in the feed")
                } else if operation.kind == .add, operation.statuses.last == 409 {
                    problems.append("\(operation): its key answered 409 (saved) but the album is not there")
                }
            case .move:
                if let id = operation.albumID { movesByAlbum[id, default: []].append(position) }
            }
        }
        // The feed's moves, oldest first, each given to the first move of its album (after the
        // one the album's previous change went to) that sent that index and that fits between
        // the versions of its client's acknowledged writes before and after it.
        func bounds(_ position: Int) -> (lower: Int64, upper: Int64) {
            let client = operations[position].client
            var lower = v0, upper = Int64.max
            for (other, operation) in operations.enumerated() where operation.client == client && operation.outcome == .acknowledged {
                guard let version = versionOf[other] else { continue }
                if other < position { lower = max(lower, version) } else if other > position { upper = min(upper, version) }
            }
            return (lower, upper)
        }
        var nextMove: [String: Int] = [:]
        for change in feed where change.kind == "moved" {
            guard let id = change.id, let positions = movesByAlbum[id] else {
                problems.append("\(change): no client sent that move")
                continue
            }
            let from = nextMove[id] ?? 0
            guard let match = positions[from...].firstIndex(where: { position in
                let (lower, upper) = bounds(position)
                return operations[position].index == change.index && lower < change.version && change.version < upper
            }) else {
                problems.append("\(change): no client sent that move then (or it is there twice)")
                continue
            }
            versionOf[positions[match]] = change.version
            explained.insert(change.version)
            nextMove[id] = match + 1
        }
        let noOpMoves = movesByAlbum.values.joined().filter { operations[$0].outcome == .acknowledged && versionOf[$0] == nil }.sorted()
        // A move without a change moved nothing: the album stood at that index meanwhile.
        for position in noOpMoves {
            let operation = operations[position]
            let mine = operations.indices.filter { operations[$0].client == operation.client && versionOf[$0] != nil }
            let lower = mine.last { $0 < position }.flatMap { versionOf[$0] } ?? v0
            let upper = mine.first { $0 > position }.flatMap { versionOf[$0] } ?? (final.version + 1)
            let stood = (lower..<max(lower, upper)).contains { version in
                let ids = state(at: version)
                return operation.index.map { ids.indices.contains($0) && ids[$0] == operation.albumID } ?? false
            }
            if !stood { problems.append("\(operation): acknowledged, not in the feed, and the album never stood at that index meanwhile") }
        }
        for change in feed where !explained.contains(change.version) && change.kind != "moved" {
            problems.append("\(change): no client's write explains it")
        }

        for (position, operation) in operations.enumerated() {
            switch operation.kind {
            case .read:
                if operation.outcome == .acknowledged, let version = operation.version {
                    history.operations.append(.init(kind: .read, label: operation.description, invoked: operation.invoked,
                                                    completed: operation.completed, version: version))
                }
            default:
                if operation.outcome == .acknowledged { acknowledgedWrites += 1 }
                guard let version = versionOf[position] else {
                    if operation.outcome == .ambiguous { ambiguousNotApplied += 1 }
                    continue
                }
                if operation.outcome == .ambiguous { ambiguousApplied += 1 }
                history.operations.append(.init(kind: .write, label: operation.description, invoked: operation.invoked,
                                                completed: operation.outcome == .acknowledged ? operation.completed : nil, version: version))
            }
        }
    }
}
