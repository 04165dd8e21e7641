/// A small linearizability check (in the manner of Jepsen's Knossos, but for one register
/// whose states are numbered) of one library's observed history: every client operation with
/// the times it was sent and answered (a monotonic clock) and the library version it made or
/// saw.
///
/// The model: a library is a register whose value is its version, 1, 2, 3, …; every write that
/// took effect made exactly one new version, and a read saw one version. The history is
/// linearizable when each operation can be given one instant within its interval (from being
/// sent to being answered; a write with no answer, which may or may not have taken effect, has
/// no upper bound) so that the instants follow the versions: write v, then the reads of v,
/// then write v + 1, and so on. Versions fix that order completely (the reads of one version
/// commute), so no search is needed: placing each operation at the earliest instant the ones
/// before it allow (greedily, in version order) finds instants if any exist. Pairs that show
/// the failure plainly are named as well: a write answered before another was sent but with
/// the later version, and a read that saw a version older than a write answered before it was
/// sent.
struct VersionHistory {
    struct Operation: Sendable, CustomStringConvertible {
        enum Kind: Sendable { case write, read }
        var kind: Kind
        /// Who sent it and what it was, for messages.
        var label: String
        /// When it was sent and answered, on one monotonic clock; `completed` nil: never answered
        /// (a write that may have taken effect at any time after it was sent).
        var invoked: Duration
        var completed: Duration?
        /// The version a write made, or a read saw.
        var version: Int64

        var description: String {
            let end = completed.map { "\(Self.format($0))" } ?? "∞"
            return "\(label) (\(kind == .write ? "wrote" : "read") v\(version), [\(Self.format(invoked)), \(end)])"
        }

        static func format(_ time: Duration) -> String {
            let (seconds, attoseconds) = time.components
            return "\(seconds).\(String(format: "%06lld", attoseconds / 1_000_000_000_000))s"
        }
    }

    /// The version before the history began (reads may see it; no write in the history made it).
    var initialVersion: Int64
    /// Every write that took effect (with its version) and every answered read.
    var operations: [Operation]

    /// Every way the history is not linearizable; empty when it is.
    func problems() -> [String] {
        var problems: [String] = []
        let writes = operations.filter { $0.kind == .write }
        let reads = operations.filter { $0.kind == .read }
        var writeOf: [Int64: Operation] = [:]
        for write in writes {
            if write.version <= initialVersion {
                problems.append("\(write): a version not after the initial one (v\(initialVersion))")
            } else if let other = writeOf[write.version] {
                problems.append("\(write) and \(other) made the same version")
            } else {
                writeOf[write.version] = write
            }
        }
        for read in reads where read.version != initialVersion && writeOf[read.version] == nil {
            problems.append("\(read) saw a version no write in the history made")
        }
        problems += plainPairs(writes: writes, reads: reads)
        if problems.isEmpty, let failure = placement(writes: writeOf, reads: reads) { problems.append(failure) }
        return problems
    }

    /// The real-time order against the versions, pair by pair (for plain messages): a write
    /// answered before another write or a read was sent has a smaller version than that write
    /// and at most the version that read saw; a read answered before another was sent saw at
    /// most what the later one saw.
    private func plainPairs(writes: [Operation], reads: [Operation]) -> [String] {
        var problems: [String] = []
        // Going down the versions: the write and the read answered earliest among the higher
        // versions (a version's own operations join them once it has been checked).
        var earliestWrite: Operation?
        var earliestRead: Operation?
        for (_, group) in Dictionary(grouping: operations, by: \.version).sorted(by: { $0.key > $1.key }) {
            for operation in group {
                if let write = earliestWrite, let answered = write.completed, answered < operation.invoked {
                    problems.append(operation.kind == .write
                        ? "\(write) was answered before \(operation) was sent, yet has the later version"
                        : "\(operation) saw an older version than \(write), answered before the read was sent")
                }
                if operation.kind == .read, let read = earliestRead, let answered = read.completed, answered < operation.invoked {
                    problems.append("\(operation) saw an older version than \(read), answered before it was sent")
                }
            }
            for operation in group {
                guard let answered = operation.completed else { continue }
                switch operation.kind {
                case .write where earliestWrite?.completed.map({ answered < $0 }) ?? true: earliestWrite = operation
                case .read where earliestRead?.completed.map({ answered < $0 }) ?? true: earliestRead = operation
                default: break
                }
            }
            if problems.count >= 20 { break }
        }
        return problems
    }

    /// Places every operation at the earliest instant allowed, in version order; the first
    /// operation whose interval ends before that instant, or nil when all fit.
    private func placement(writes: [Int64: Operation], reads: [Operation]) -> String? {
        let readsOf = Dictionary(grouping: reads, by: \.version)
        let versions = Set(writes.keys).union(readsOf.keys).sorted()
        // The instant the previous operations ended at, and which one set it.
        var instant: Duration = .zero
        var setBy: Operation?
        for version in versions {
            var groupStart = instant
            var groupSetBy = setBy
            if let write = writes[version] {
                let point = max(instant, write.invoked)
                if let answered = write.completed, point > answered {
                    return "\(write) cannot take effect within its interval: it must come after \(setBy.map(String.init(describing:)) ?? "?")"
                }
                if write.invoked >= instant { groupSetBy = write }
                groupStart = point
            }
            var groupEnd = groupStart
            var groupEndSetBy = groupSetBy
            for read in readsOf[version] ?? [] {
                let point = max(groupStart, read.invoked)
                if let answered = read.completed, point > answered {
                    return "\(read) cannot see v\(version) within its interval: v\(version) exists only after \(groupSetBy.map(String.init(describing:)) ?? "?")"
                }
                if point > groupEnd {
                    groupEnd = point
                    groupEndSetBy = read
                }
            }
            instant = groupEnd
            setBy = groupEndSetBy
        }
        return nil
    }
}
