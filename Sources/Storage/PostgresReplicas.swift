import Dispatch
import Essentials
import Postgres
import Synchronization

/// Read replicas of the primary (streaming standbys), and where each request's reads go.
///
/// A read goes to a replica only when the request allows it (a ``ReadPosition`` bound with
/// `mayUseReplica`: the reads of a GET or HEAD) and a replica is fit for it:
/// - it answers (one that fails is skipped for ``Configuration/restAfterFailure``, its read
///   made again on the primary);
/// - it is at most ``Configuration/maxLag`` behind the primary, as the monitor last measured
///   (the time since the primary first went past what the replica has replayed; measured every
///   ``Configuration/monitorInterval``);
/// - it has replayed the client's position and what the request's earlier reads saw
///   (``ReadPosition/position``): the read first waits up to ``Configuration/wait`` for that,
///   looking every ``Configuration/pollInterval``, then gives up and reads the primary (and so
///   do the request's later reads, which wait no more).
/// Every read under a ``ReadPosition`` records the position it saw, read after its snapshot was
/// taken (an upper bound), so the position handed back is never older than what was shown.
public final class PostgresReplicas: Sendable {
    public struct Configuration: Sendable {
        public var maxLag: Duration = .seconds(1)
        public var wait: Duration = .milliseconds(100)
        public var pollInterval: Duration = .milliseconds(2)
        public var monitorInterval: Duration = .milliseconds(250)
        public var restAfterFailure: Duration = .seconds(1)

        public init() {}
    }

    /// One replica: its pool and what the monitor and the reads learnt of it.
    public final class Replica: Sendable {
        /// `replica-0`, … in the order the URLs were given (a metric's label).
        public let name: String
        let pool: PostgresPool
        fileprivate let state = Mutex(State())
        fileprivate let readCount = Atomic<Int>(0)
        fileprivate let measurementCount = Atomic<Int>(0)

        fileprivate struct State {
            /// nil until the monitor has measured it.
            var lag: Duration?
            var restingUntil: ContinuousClock.Instant?
        }

        init(name: String, pool: PostgresPool) {
            self.name = name
            self.pool = pool
        }

        /// Reads this replica served.
        public var reads: Int { readCount.load(ordering: .relaxed) }

        /// How often the monitor has measured its lag.
        var measurements: Int { measurementCount.load(ordering: .relaxed) }

        /// The lag the monitor last measured (nil: not measured yet, or the replica does not answer).
        public var lag: Duration? { state.withLock { $0.lag } }

        /// Whether reads may use it now: it answers and is at most `maxLag` behind.
        public func isFit(maxLag: Duration, at now: ContinuousClock.Instant = .now) -> Bool {
            state.withLock { state in
                if let until = state.restingUntil, until > now { return false }
                guard let lag = state.lag else { return false }
                return lag <= maxLag
            }
        }

        fileprivate func rest(for duration: Duration) {
            state.withLock { state in
                state.restingUntil = .now + duration
                state.lag = nil
            }
        }
    }

    public let replicas: [Replica]
    public let configuration: Configuration
    private let primary: PostgresPool
    private let next = Atomic<UInt>(0)
    private let waitCount = Atomic<Int>(0)
    private let fallbackCount = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    /// What ends each monitor thread (signalled once by `close()`).
    private let monitorStops = Mutex<[DispatchSemaphore]>([])
    /// The primary's position over the last minute, oldest first (the monitor's samples).
    private let samples = Mutex<[(at: ContinuousClock.Instant, position: UInt64)]>([])

    /// The position a read saw: the replica's replayed position, or the primary's WAL insert
    /// position (which is past every commit a snapshot taken before it shows).
    static let positionSQL = """
        SELECT (COALESCE(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END,
                         '0/0'::pg_lsn) - '0/0'::pg_lsn)::int8
        """

    /// Pools for `urls` (one per replica, each of `poolSize`, connecting lazily) and the monitor
    /// threads measuring their lag.
    public init(urls: [String], password: String?, poolSize: Int, primary: PostgresPool, configuration: Configuration = Configuration()) {
        self.primary = primary
        self.configuration = configuration
        replicas = urls.enumerated().map { index, url in
            var pool = PostgresPool.Configuration(url: url, size: poolSize, acquireTimeout: .milliseconds(200), connectTimeout: .seconds(2))
            pool.password = password
            pool.firstReconnectDelay = primary.configuration.firstReconnectDelay
            pool.longestReconnectDelay = primary.configuration.longestReconnectDelay
            return Replica(name: "replica-\(index)", pool: PostgresPool(pool))
        }
        // One thread samples the primary, one per replica measures it, each from its first look
        // on (an unreachable replica would hold up the start for its connect timeout), so a
        // replica that stops answering delays no other's measurement; weakly: replicas that are
        // not closed (a test's) end their monitor when they go.
        monitor(named: "bl-replica-lag") { $0.samplePrimary() }
        for index in replicas.indices {
            monitor(named: "bl-replica-\(index)") { $0.measure($0.replicas[index]) }
        }
    }

    /// Runs `look` on a thread of its own every monitor interval until `close()`.
    private func monitor(named name: String, _ look: @escaping @Sendable (PostgresReplicas) -> Void) {
        let stopping = DispatchSemaphore(value: 0)
        monitorStops.withLock { $0.append(stopping) }
        startThread(named: name) { [weak self, interval = configuration.monitorInterval] in
            repeat {
                guard let self else { return }
                look(self)
            } while stopping.wait(timeout: .now(plus: interval)) == .timedOut
        }
    }

    /// Stops the monitor and closes the replicas' idle connections.
    public func close() {
        guard stopped.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        for stopping in monitorStops.withLock({ $0 }) { stopping.signal() }
        for replica in replicas { replica.pool.closeIdleConnections() }
    }

    /// Reads that waited for a replica to replay their client's position, and reads that
    /// could have used a replica but went to the primary (none fit, or the one tried was still
    /// behind after the wait, or failed).
    public var statistics: (waits: Int, fallbacks: Int) {
        (waitCount.load(ordering: .relaxed), fallbackCount.load(ordering: .relaxed))
    }

    // MARK: - Reads

    /// Runs `body` with a connection of a fit replica, else of the primary (see the type's
    /// rules); `body` must record its position (``record(_:)``) when it has taken its snapshot.
    func withReadConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        guard let position = ReadPosition.current, position.triesReplicas else { return try primary.withConnection(body) }
        // Not older than the client's position, nor than this request's earlier reads.
        let floor = position.position
        for replica in candidates() {
            do {
                let answer = try replica.pool.withConnection { connection -> T? in
                    guard try reached(floor, on: connection) else { return nil }
                    return try body(connection)
                }
                if let answer {
                    replica.readCount.wrappingAdd(1, ordering: .relaxed)
                    return answer
                }
                break  // behind the client: the primary has it
            } catch let error as PostgresError where error.kind != .timeout && error.kind != .invalidData {
                // Down, full, a read cancelled by its replay (a conflict with recovery), a
                // schema it has not replayed yet: the primary answers this read (where the
                // read's own mistakes fail again); a replica that does not answer rests a while.
                if error.kind == .connection { replica.rest(for: configuration.restAfterFailure) }
            }
        }
        fallbackCount.wrappingAdd(1, ordering: .relaxed)
        position.notePrimaryOnly()
        return try primary.withConnection(body)
    }

    /// The index of the replica next in turn among the fit ones (nil: none is fit).
    func nextFit() -> Int? {
        let now = ContinuousClock.now
        let fit = replicas.indices.filter { replicas[$0].isFit(maxLag: configuration.maxLag, at: now) }
        guard !fit.isEmpty else { return nil }
        return fit[Int(next.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(fit.count))]
    }

    /// `body` on replica `index`, for a read shared by several requests (they each check its
    /// position against their own); nil when it failed (a replica that does not answer rests).
    func shared<T>(_ index: Int, _ body: (PostgresConnection) throws -> T) -> T? {
        let replica = replicas[index]
        do {
            let value = try replica.pool.withConnection(body)
            replica.readCount.wrappingAdd(1, ordering: .relaxed)
            return value
        } catch {
            if let error = error as? PostgresError, error.kind == .connection { replica.rest(for: configuration.restAfterFailure) }
            return nil
        }
    }

    /// Records the position `connection`'s snapshot has (read after it was taken: an upper
    /// bound) in the request's ``ReadPosition``; nothing without one.
    static func record(_ connection: PostgresConnection) throws {
        guard let position = ReadPosition.current else { return }
        position.note(try Self.position(connection))
    }

    static func position(_ connection: PostgresConnection) throws -> UInt64 {
        UInt64(clamping: try connection.scalar(positionSQL, as: Int64.self) ?? 0)
    }

    /// Replicas a read may use now, the next in turn first.
    private func candidates() -> [Replica] {
        guard let first = nextFit() else { return [] }
        let now = ContinuousClock.now
        return [replicas[first]] + replicas.indices.filter { $0 != first && replicas[$0].isFit(maxLag: configuration.maxLag, at: now) }.map { replicas[$0] }
    }

    /// Whether `connection`'s server has replayed `required`, waiting up to the configured
    /// wait for it (looked at before the snapshot: what it then shows includes that position).
    private func reached(_ required: UInt64, on connection: PostgresConnection) throws -> Bool {
        guard required > 0 else { return true }
        if try Self.position(connection) >= required { return true }
        waitCount.wrappingAdd(1, ordering: .relaxed)
        // A standby tells nobody when it replays (PostgreSQL 15 has no wait for a position), so
        // its position is asked for every poll interval until the deadline; the client going
        // away ends the wait at once (its cancellation signals `woken`).
        let budget = QueryBudget.current
        let woken = DispatchSemaphore(value: 0)
        let poll = { () throws -> Bool in
            let deadline = ContinuousClock.now + self.configuration.wait
            while ContinuousClock.now < deadline {
                _ = woken.wait(timeout: .now(plus: self.configuration.pollInterval))
                if let budget, let reason = budget.interruption() { throw budget.stopped(reason) }
                if try Self.position(connection) >= required { return true }
            }
            return false
        }
        guard let cancellation = budget?.cancellation else { return try poll() }
        return try cancellation.whileWaiting(wakeUp: { woken.signal() }, poll)
    }

    // MARK: - Lag

    /// The primary's position now, kept for a minute (what a replica's lag is measured against).
    private func samplePrimary() {
        let now = ContinuousClock.now
        guard let position = try? primary.withConnection({ try Self.position($0) }) else { return }
        samples.withLock { samples in
            samples.append((now, position))
            samples.removeAll { now - $0.at > .seconds(60) }
        }
    }

    /// One look at `replica`: its replayed position; its lag is the time since the primary
    /// first went past it (0 when it has caught up). None before the primary's first sample
    /// (nothing to measure it against: the replica serves no read until then).
    private func measure(_ replica: Replica) {
        let now = ContinuousClock.now
        if let until = replica.state.withLock({ $0.restingUntil }), until > now { return }
        guard samples.withLock({ !$0.isEmpty }) else { return }
        do {
            let replayed = try replica.pool.withConnection { try Self.position($0) }
            let behindSince = samples.withLock { samples in samples.first { $0.position > replayed }?.at }
            replica.state.withLock { state in
                state.lag = behindSince.map { ContinuousClock.now - $0 } ?? .zero
                state.restingUntil = nil
            }
            replica.measurementCount.wrappingAdd(1, ordering: .relaxed)
        } catch {
            replica.rest(for: configuration.restAfterFailure)
        }
    }
}
