import Synchronization

/// Where one request stands in the database's history, for a server that reads from
/// replicas: the position its client says it has seen (nothing older may be shown to it), and
/// the newest position its own reads and writes reached (handed back to the client).
///
/// A position is a PostgreSQL WAL position (an LSN, as a number): every commit has one, a
/// primary's grows with each commit, and a replica has replayed everything up to its own. The
/// server binds one to ``current`` around a request's blocking work; the store looks it up on
/// the thread that reads or writes. Work that binds none (background followers, reloads)
/// reads the primary and records nothing.
public final class ReadPosition: Sendable {
    /// The position of the work running on this thread (or task), if any.
    @TaskLocal public static var current: ReadPosition?

    /// The client's position: a read may come from a replica only once it has replayed this
    /// far (0: the client has seen nothing, any replica in bounds will do).
    public let required: UInt64
    /// Whether this request's reads may come from a replica (reads of a GET or HEAD); the
    /// reads inside a write go to the primary.
    public let mayUseReplica: Bool
    private let reached = Atomic<UInt64>(0)
    private let unknown = Atomic<Bool>(false)
    private let primaryOnly = Atomic<Bool>(false)

    public init(required: UInt64, mayUseReplica: Bool) {
        self.required = required
        self.mayUseReplica = mayUseReplica
    }

    /// Records that this request's work saw (or committed) the state at `position`.
    public func note(_ position: UInt64) {
        _ = reached.max(position, ordering: .relaxed)
    }

    /// The newest of what the client had and what this request reached: the position to hand
    /// back, and the one a later read of this request must not be older than.
    public var position: UInt64 { Swift.max(required, reached.load(ordering: .relaxed)) }

    /// Records that this request committed a write whose position could not be read: no
    /// position is handed back (an older one would not cover the write).
    public func noteUnknown() {
        unknown.store(true, ordering: .relaxed)
    }

    /// The position to hand back; nil when a write's could not be read.
    public var handedBack: UInt64? { unknown.load(ordering: .relaxed) ? nil : position }

    /// Whether this request's reads still may try a replica: not once one of them had to go to
    /// the primary (a replica was behind or failed), so no later read waits again.
    public var triesReplicas: Bool { mayUseReplica && !primaryOnly.load(ordering: .relaxed) }

    /// Records that a read of this request went to the primary after trying a replica.
    public func notePrimaryOnly() {
        primaryOnly.store(true, ordering: .relaxed)
    }

    /// `16/B374D848`: a position as PostgreSQL writes an LSN (two hexadecimal halves).
    public static func text(_ position: UInt64) -> String {
        String(position >> 32, radix: 16, uppercase: true) + "/" + String(position & 0xFFFF_FFFF, radix: 16, uppercase: true)
    }

    /// The position of an LSN's text (``text(_:)``), nil for anything else.
    public static func parse<S: StringProtocol>(_ text: S) -> UInt64? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ (1...8).contains($0.utf8.count) && $0.allSatisfy(\.isHexDigit) }),
              let high = UInt64(parts[0], radix: 16), let low = UInt64(parts[1], radix: 16)
        else { return nil }
        return high << 32 | low
    }
}
