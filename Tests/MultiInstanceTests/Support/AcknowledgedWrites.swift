/// The writes the server acknowledged to each load client, in the order the client sent them,
/// and the check that the change feed is exactly those writes, in an order the clients could
/// have seen: a reference the database's own versions must agree with.
///
/// Each client sends one request at a time, so each of its writes committed after the one
/// before it was acknowledged: their versions must rise in the client's order. A client only
/// moves albums it added itself, so every move of an album is in its owner's order too.
struct AcknowledgedWrites {
    enum Kind: String, Sendable { case added, deleted, moved }

    /// One acknowledged write: the album and the index the answer named.
    struct Write: Sendable, CustomStringConvertible {
        var kind: Kind
        var id: String
        var index: Int
        var description: String { "\(kind) \(id)@\(index)" }
    }

    /// Per client, its acknowledged writes in the order it sent them.
    var clients: [[Write]]

    /// Every way the feed (`changes`, the changes after the version `initial` was read at)
    /// differs from the acknowledged writes; empty when they agree.
    ///
    /// - Every acknowledged add and delete is in the feed exactly once, and nothing else is
    ///   there but acknowledged moves.
    /// - An acknowledged move is in the feed, or it moved nothing: the album was already at
    ///   that index at some version between the client's previous and next writes.
    /// - Per client, the versions of its writes rise in the order it sent them.
    /// - Replaying the feed on `initial` fits at every step (each delete and move names the
    ///   album at that index).
    func problems(changes: [LibraryProbe.Change], initial: [String]) -> [String] {
        var problems: [String] = []
        // states[i]: the order after the first i changes (states[0] = initial).
        var states = [initial]
        for change in changes {
            let step = LibraryProbe.replay([change], on: states[states.count - 1])
            problems += step.misfits
            states.append(step.ids)
        }
        let firstVersion = changes.first?.version ?? 0
        func position(_ version: Int64) -> Int { Int(version - firstVersion) + 1 }

        var added: [String: Int64] = [:], deleted: [String: Int64] = [:], moves: [String: [LibraryProbe.Change]] = [:]
        for change in changes {
            guard let id = change.id else { problems.append("\(change): no id"); continue }
            switch change.kind {
            case "added" where added[id] == nil: added[id] = change.version
            case "deleted" where deleted[id] == nil: deleted[id] = change.version
            case "moved": moves[id, default: []].append(change)
            default: problems.append("\(change): unexpected, or a second change of its kind for that album")
            }
        }
        var acknowledgedAdds = Set<String>(), acknowledgedDeletes = Set<String>()
        var matchedMoves = Set<Int64>()
        for (client, writes) in clients.enumerated() {
            var previous: Int64 = firstVersion - 1
            for (number, write) in writes.enumerated() {
                let label = "client \(client) write \(number) (\(write))"
                switch write.kind {
                case .added, .deleted:
                    let version = write.kind == .added ? added[write.id] : deleted[write.id]
                    if write.kind == .added { acknowledgedAdds.insert(write.id) } else { acknowledgedDeletes.insert(write.id) }
                    guard let version else {
                        problems.append("\(label): acknowledged but not in the change feed")
                        continue
                    }
                    if version <= previous { problems.append("\(label): version \(version) is not after the client's previous write (\(previous))") }
                    previous = version
                case .moved:
                    // The next write of this client with a version of its own bounds this one.
                    let next = writes[(number + 1)...].lazy.compactMap { $0.kind == .added ? added[$0.id] : $0.kind == .deleted ? deleted[$0.id] : nil }.first
                    let upper = next ?? (firstVersion + Int64(changes.count))
                    if let change = moves[write.id]?.first(where: {
                        !matchedMoves.contains($0.version) && $0.index == write.index && $0.version > previous && $0.version < upper
                    }) {
                        matchedMoves.insert(change.version)
                        previous = change.version
                    } else {
                        let (lower, last) = (position(previous), position(upper) - 1)
                        let wasThere = lower <= last && (lower...last).clamped(to: 0...(states.count - 1)).contains {
                            states[$0].indices.contains(write.index) && states[$0][write.index] == write.id
                        }
                        if !wasThere { problems.append("\(label): acknowledged but not in the change feed, and the album was never at that index meanwhile") }
                    }
                }
            }
        }
        for id in added.keys where !acknowledgedAdds.contains(id) { problems.append("add of \(id) in the feed was never acknowledged") }
        for id in deleted.keys where !acknowledgedDeletes.contains(id) { problems.append("delete of \(id) in the feed was never acknowledged") }
        for change in moves.values.joined() where !matchedMoves.contains(change.version) {
            problems.append("\(change) in the feed matches no acknowledged move")
        }
        return problems
    }
}
