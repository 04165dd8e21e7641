import Synchronization

/// A flag that one side sets once (the client went away) and the other side looks at while it
/// works (a database read between two steps of its query). Setting it is a store and, when a
/// waiter registered a wake-up, a call to it: cheap and non-blocking, so an event loop may set it.
public final class CancellationFlag: Sendable {
    private let cancelled = Atomic<Bool>(false)
    /// What a waiter asked to be told when the flag is set (a poll to wake up), by key.
    private let wakeUps = Mutex<[UInt64: @Sendable () -> Void]>([:])
    private let nextKey = Atomic<UInt64>(0)

    public init() {}

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Sets the flag (once; later calls do nothing) and calls the registered wake-ups. A
    /// wake-up must not block: it runs on the caller's thread (an event loop).
    public func cancel() {
        guard cancelled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        let calls = wakeUps.withLock { wakeUps in
            defer { wakeUps = [:] }
            return Array(wakeUps.values)
        }
        for call in calls { call() }
    }

    /// Calls `wakeUp` when the flag is set while `body` runs (at once if it is already set, before
    /// `body`). `wakeUp` must not block.
    public func whileWaiting<T, E: Error>(wakeUp: @escaping @Sendable () -> Void, _ body: () throws(E) -> T) throws(E) -> T {
        let key = nextKey.wrappingAdd(1, ordering: .relaxed).newValue
        wakeUps.withLock { $0[key] = wakeUp }
        if isCancelled { wakeUp() }
        defer { _ = wakeUps.withLock { $0.removeValue(forKey: key) } }
        return try body()
    }
}

/// How many database queries were stopped before they finished, and why (a server's
/// `/metrics` shows them). One per stop: a query that is stopped counts once.
public final class QueryInterruptionCounters: Sendable {
    private let timedOutCount = Atomic<Int>(0)
    private let cancelledCount = Atomic<Int>(0)

    public init() {}

    /// Queries stopped because they ran past the time limit.
    public var timedOut: Int { timedOutCount.load(ordering: .relaxed) }
    /// Queries stopped because the client that asked for them went away.
    public var cancelled: Int { cancelledCount.load(ordering: .relaxed) }

    public func record(_ reason: QueryInterrupted.Reason) {
        switch reason {
        case .timeLimit: timedOutCount.wrappingAdd(1, ordering: .relaxed)
        case .cancelled: cancelledCount.wrappingAdd(1, ordering: .relaxed)
        }
    }
}

/// The limits on one request's database work: a time limit (counted from the start of its first
/// database read) and a cancellation flag (set when its client goes away).
///
/// The server binds one to ``current`` around a read request's blocking work; the database
/// layers (SQLite's progress handler, PostgreSQL's `statement_timeout` and cancel request) look
/// it up on the thread that runs the query, and stop the query once ``interruption()`` says so.
/// Work that binds none (writes, imports, exports, background threads) is never cut.
public final class QueryBudget: Sendable {
    /// The longest the request's database work may take, nil for no limit.
    public let timeLimit: Duration?
    /// Set when the request's client went away; nil when nobody watches the client.
    public let cancellation: CancellationFlag?
    /// Where stops are counted (nil: nowhere).
    public let counters: QueryInterruptionCounters?
    /// `SystemClock` nanoseconds at which the time limit runs out; 0 until the first read begins.
    private let deadline = Atomic<UInt64>(0)
    /// Whether a stop was counted already (the first one counts, a query stopped once).
    private let counted = Atomic<Bool>(false)
    private static let clock = SystemClock()

    /// The budget of the work running on this thread (or task), if any.
    @TaskLocal public static var current: QueryBudget?

    public init(timeLimit: Duration?, cancellation: CancellationFlag?, counters: QueryInterruptionCounters? = nil) {
        self.timeLimit = timeLimit.flatMap { $0 > .zero ? $0 : nil }
        self.cancellation = cancellation
        self.counters = counters
    }

    /// Starts the time limit (the first call does; later ones keep the first start) and returns
    /// how much of it is left, nil without a limit.
    @discardableResult
    public func begin() -> Duration? {
        guard let timeLimit else { return nil }
        let now = Self.clock.nanoseconds()
        let limit = timeLimit.nanoseconds
        let start = deadline.compareExchange(expected: 0, desired: now &+ limit, ordering: .relaxed)
        let end = start.exchanged ? now &+ limit : start.original
        return end > now ? .nanoseconds(Int64(clamping: end - now)) : .zero
    }

    /// Why the work must stop now, or nil to go on. Cheap (an atomic load and a clock read):
    /// called every few thousand steps of a query.
    public func interruption() -> QueryInterrupted.Reason? {
        if let cancellation, cancellation.isCancelled { return .cancelled }
        guard let timeLimit else { return nil }
        let end = deadline.load(ordering: .relaxed)
        guard end != 0, Self.clock.nanoseconds() >= end else { return nil }
        return .timeLimit(timeLimit)
    }

    /// The error for a query stopped for `reason`, counted once per budget.
    public func stopped(_ reason: QueryInterrupted.Reason) -> QueryInterrupted {
        if counted.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            counters?.record(reason)
        }
        return QueryInterrupted(reason: reason)
    }
}

/// A database query stopped before it finished: past its request's time limit, or because the
/// client went away (see ``QueryBudget``). Nothing was changed by it (only reads are stopped).
public struct QueryInterrupted: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        case timeLimit(Duration)
        case cancelled
    }

    public let reason: Reason

    public init(reason: Reason) {
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case let .timeLimit(limit): "the query was stopped after its time limit of \(limit)"
        case .cancelled: "the query was stopped because its client went away"
        }
    }
}
