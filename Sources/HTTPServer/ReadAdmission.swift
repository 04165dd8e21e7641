import Synchronization

/// Admission control for the read lane: the blocking work of routes marked
/// ``RouteOptions/expensiveRead`` (uncached list reads, whose cost the client chooses with its
/// query) runs on a pool of its own, so it never takes the workers of writes and other
/// blocking handlers, and what it may queue is bounded twice:
///
/// - at most `threads + queue` such requests are admitted (running or waiting) at once;
/// - at most `perClient` of them for one client address (``RequestContext/clientAddress``:
///   after a trusted proxy's word, so a proxy's clients are told apart); 0 lifts this limit.
///
/// A request past either bound is refused at once on the event loop with ``ServerBusy``
/// (503 with `Retry-After`), through the route's middleware like any answer. The decision is
/// made when the route's fast path declined (a cached page, a 304 never count), and the
/// request counts until its blocking work has returned (before its response is sent, so a
/// client that waits for each answer is never refused). Waiting work runs first in, first out.
///
/// The router makes one when a route is marked (``RouterBuilder/readLimits``); the server runs
/// the lane's threads (``Limits/threads``).
public final class ReadAdmission: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Threads of the read lane (at least 1).
        public var threads: Int
        /// Admitted requests that may wait for a thread (0: none waits).
        public var queue: Int
        /// Admitted requests of one client address at once, running or waiting; 0: no limit.
        public var perClient: Int
        /// `Retry-After` of a refusal, in seconds.
        public var retryAfterSeconds: Int
        /// The nice value of the lane's threads (0-19; 0 leaves them at the process's own), so
        /// that on a saturated CPU the event loops, the workers (writes, cheap reads) win
        /// over expensive reads, which still get a share (Linux: per thread, setpriority).
        public var nice: Int

        public init(threads: Int = 4, queue: Int = 256, perClient: Int = 4, retryAfterSeconds: Int = 1, nice: Int = 10) {
            self.nice = min(19, max(0, nice))
            self.threads = max(1, threads)
            self.queue = max(0, queue)
            self.perClient = max(0, perClient)
            self.retryAfterSeconds = max(1, retryAfterSeconds)
        }

        /// Admitted requests at most: `threads + queue`.
        public var capacity: Int { threads + queue }
    }

    /// What the lane has done since start, and holds now.
    public struct Statistics: Sendable, Equatable {
        /// Requests admitted and not finished (running or waiting for a thread).
        public var inFlight: Int
        /// Of those, the ones running.
        public var running: Int
        /// Requests refused because `threads + queue` were in flight.
        public var refusedQueueFull: Int
        /// Requests refused because their client had `perClient` in flight.
        public var refusedClientLimit: Int
    }

    private struct State {
        var inFlight = 0
        /// Client address → its requests in flight; an address leaves when it has none.
        var perClient: [String: Int] = [:]
    }

    public let limits: Limits
    private let state = Mutex(State())
    private let runningCount = Atomic<Int>(0)
    private let queueFullCount = Atomic<Int>(0)
    private let clientLimitCount = Atomic<Int>(0)

    public init(limits: Limits) {
        self.limits = limits
    }

    public var statistics: Statistics {
        Statistics(
            inFlight: state.withLock { $0.inFlight }, running: runningCount.load(ordering: .relaxed),
            refusedQueueFull: queueFullCount.load(ordering: .relaxed),
            refusedClientLimit: clientLimitCount.load(ordering: .relaxed))
    }

    /// Admits one request of `client`, or throws the refusal.
    func admit(client: String) throws(ServerBusy) -> Ticket {
        let perClient = limits.perClient
        let capacity = limits.capacity
        let refusal = state.withLock { state -> ServerBusy.Reason? in
            let mine = state.perClient[client, default: 0]
            if perClient > 0, mine >= perClient { return .clientLimit(limit: perClient) }
            if state.inFlight >= capacity { return .queueFull(.reads) }
            state.inFlight += 1
            state.perClient[client] = mine + 1
            return nil
        }
        if let refusal {
            switch refusal {
            case .clientLimit: clientLimitCount.wrappingAdd(1, ordering: .relaxed)
            case .queueFull: queueFullCount.wrappingAdd(1, ordering: .relaxed)
            }
            throw ServerBusy(refusal, retryAfterSeconds: limits.retryAfterSeconds)
        }
        return Ticket(admission: self, client: client)
    }

    fileprivate func release(_ client: String) {
        state.withLock { state in
            state.inFlight -= 1
            let left = state.perClient[client, default: 1] - 1
            state.perClient[client] = left > 0 ? left : nil
        }
    }

    fileprivate func started() { runningCount.wrappingAdd(1, ordering: .relaxed) }
    fileprivate func finished() { runningCount.wrappingSubtract(1, ordering: .relaxed) }

    /// One admitted request. It is released when its work has run, or, should the work be
    /// dropped unrun (a pool shutting down), when the last reference to it goes.
    final class Ticket: Sendable {
        private let admission: ReadAdmission
        private let client: String
        private let released = Atomic<Bool>(false)

        fileprivate init(admission: ReadAdmission, client: String) {
            self.admission = admission
            self.client = client
        }

        /// Runs the admitted work, counted as running, and releases the ticket when it returns.
        func run(_ work: () throws -> HTTPResponse) rethrows -> HTTPResponse {
            admission.started()
            defer {
                admission.finished()
                release()
            }
            return try work()
        }

        func release() {
            guard !released.exchange(true, ordering: .relaxed) else { return }
            admission.release(client)
        }

        deinit { release() }
    }
}

/// A route's responder inside the read lane's admission: the fast path's answers pass as they
/// are; blocking work the route's classifier calls cheap (``RouteOptions/isExpensive``) passes
/// unadmitted (the server runs it on the general workers); expensive blocking work is
/// admitted (or refused with ``ServerBusy``) on the spot.
struct AdmissionResponder: HTTPResponder {
    let admission: ReadAdmission
    let options: RouteOptions
    let wrapped: any HTTPResponder

    func respond(to request: HTTPRequest, context: RequestContext) throws -> HTTPReply {
        switch try wrapped.respond(to: request, context: context) {
        case let .response(response):
            return .response(response)
        case let .blocking(work):
            guard options.isReadLaneWork(request) else { return .blocking(work) }
            let ticket = try admission.admit(client: context.clientAddress)
            return .blocking { try ticket.run(work) }
        }
    }
}
