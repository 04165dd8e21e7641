#if canImport(Glibc)
import Essentials
import CLinux
import Glibc
#endif
import Foundation
import Synchronization

/// One epoll loop on its own thread. It owns a listening socket and the connections accepted
/// on it for their whole life; nothing else touches them. Other threads talk to the loop only
/// through ``execute(_:)``, which queues a closure and wakes the loop through an eventfd.
///
/// `@unchecked Sendable`: every stored `var` is confined to the loop thread, except `tasks`,
/// which is guarded by its `Mutex`.
final class EventLoop: @unchecked Sendable {
    private static let listenerToken: UInt64 = 0
    private static let wakeToken: UInt64 = 1

    let index: Int
    let shared: ServerShared
    private let epfd: Int32
    private let wakefd: Int32
    private let tasks = Mutex<[@Sendable (EventLoop) -> Void]>([])
    /// Requests this loop has dispatched so far. Only this loop writes it (one counter per loop,
    /// not one the loops share, so the request path touches no cache line another core writes);
    /// a fan-out reads it before and after a round to tell whether requests competed with it.
    let requestsDispatched = Atomic<Int>(0)

    // Loop-thread state. The collections the loop reads on every wake-up skip the dynamic
    // exclusivity check (`@exclusivity(unchecked)`): only the loop thread touches them.
    private var listener: ListeningSocket?
    @exclusivity(unchecked) private var connections: [UInt64: Connection] = [:]
    private var nextConnectionID: UInt64 = 2
    /// Connections that used up their budget with work left: each gets another turn after
    /// the next round of events (two lists, swapped, so a turn can ask for the next one).
    @exclusivity(unchecked) private var laterTurns: [UInt64] = []
    @exclusivity(unchecked) private var turnsNow: [UInt64] = []
    private var running = true
    private var draining = false
    private var reportedDrained = false
    private var lastSweep: UInt64 = 0
    /// While accept fails for want of descriptors: when to try again (MonotonicClock ns; 0
    /// when accepting), and the failures not yet reported.
    private var acceptPausedUntil: UInt64 = 0
    private var acceptFailuresUnreported = 0
    private var lastAcceptReport: UInt64?
    /// Accept failures are logged at most once per this interval.
    static let acceptReportInterval: UInt64 = 5_000_000_000
    private var dateSecond = 0
    /// The server's clock (``HTTPServer/Configuration/clock``): every timeout is measured on it.
    private let clock: any MonotonicClock
    /// The clock's time at the current loop iteration (read once per wake-up, as nginx
    /// does): what connection deadlines are computed from.
    private(set) var now: UInt64
    /// The same moment on the ContinuousClock: when requests completed in this wake-up count
    /// as received.
    private(set) var wokeAt: ContinuousClock.Instant = .now
    /// `Date: ...\r\n` for response heads, refreshed once a second.
    private(set) var dateLine: [UInt8] = []
    let readScratch: UnsafeMutableRawBufferPointer
    /// A sent output buffer kept for the next response head (``OutputQueue``): responses
    /// encoded on this loop reuse it instead of allocating. At most one, of bounded capacity.
    /// (Loop thread only, like the connections that use it: no dynamic exclusivity check.)
    @exclusivity(unchecked) var recycledOutput: [UInt8] = []
    private let finished = DispatchSemaphore(value: 0)

    init(index: Int, listener: ListeningSocket, shared: ServerShared) throws {
        self.index = index
        self.shared = shared
        self.listener = listener
        clock = shared.clock
        now = clock.nanoseconds()
        epfd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epfd >= 0 else { throw SocketError("epoll_create1") }
        wakefd = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard wakefd >= 0 else {
            close(epfd)
            throw SocketError("eventfd")
        }
        readScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        try register(listener.fd, token: Self.listenerToken, events: EPOLLIN.rawValue)
        try register(wakefd, token: Self.wakeToken, events: EPOLLIN.rawValue)
        refreshDate()
    }

    deinit {
        close(epfd)
        close(wakefd)
        readScratch.deallocate()
    }

    // MARK: - Any thread

    /// Runs `task` on the loop thread, soon.
    func execute(_ task: @escaping @Sendable (EventLoop) -> Void) {
        // Only the first task of a batch needs to wake the loop: later ones ride along, since
        // the loop takes the whole queue after reading the eventfd. (One syscall per stream
        // write would otherwise dominate fan-out to many subscribers.)
        let wasEmpty = tasks.withLock { tasks -> Bool in
            defer { tasks.append(task) }
            return tasks.isEmpty
        }
        if wasEmpty {
            var one: UInt64 = 1
            _ = write(wakefd, &one, 8)
        }
    }

    /// Starts the loop's thread.
    func start() {
        startThread(named: "event-loop-\(index)") { [self] in
            self.run()
            self.finished.signal()
        }
    }

    /// Waits until the loop's thread has ended.
    func waitUntilStopped() { finished.wait() }

    // MARK: - Loop thread

    func connection(_ id: UInt64) -> Connection? { connections[id] }

    var connectionCount: Int { connections.count }

    /// Whether the calling thread is an event loop's (of any server): code that waits for the
    /// loops (``HTTPStreamWriter/fanOut(_:to:limit:checkEvery:)``) must not run there.
    static var isCurrentThreadALoop: Bool { pthread_getspecific(loopThreadKey) != nil }

    private func run() {
        // Marks the thread as a loop's for `isCurrentThreadALoop` (any non-nil value).
        pthread_setspecific(loopThreadKey, UnsafeRawPointer(bitPattern: 1))
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        while running {
            // With turns waiting, only look for new events; do not sleep. While accepting is
            // paused, wake up in time to resume it.
            var timeout: Int32 = laterTurns.isEmpty ? 250 : 0
            if acceptPausedUntil != 0 && timeout > 0 {
                let left = acceptPausedUntil > now ? (acceptPausedUntil - now) / 1_000_000 + 1 : 0
                timeout = Int32(min(UInt64(timeout), left))
            }
            let n = events.withUnsafeMutableBufferPointer { epoll_wait(epfd, $0.baseAddress, Int32($0.count), timeout) }
            if n < 0 && errno != EINTR { break }
            now = clock.nanoseconds()
            wokeAt = .now
            refreshDate()
            if n > 0 {
                for i in 0..<Int(n) {
                    let event = events[i]
                    switch event.data.u64 {
                    case Self.listenerToken: acceptConnections()
                    case Self.wakeToken: runTasks()
                    case let id:
                        connections[id]?.handle(events: event.events)
                    }
                }
            }
            if !laterTurns.isEmpty { runLaterTurns() }
            now = clock.nanoseconds()
            if acceptPausedUntil != 0 && now >= acceptPausedUntil { resumeAccepting() }
            if now &- lastSweep > 100_000_000 {
                lastSweep = now
                sweepTimeouts(now: now)
            }
        }
        for connection in Array(connections.values) { connection.close() }
        listener = nil
    }

    /// Asks for another turn for a connection that yielded with work left (loop thread).
    func driveLater(_ connection: Connection) { laterTurns.append(connection.id) }

    private func runLaterTurns() {
        swap(&turnsNow, &laterTurns)
        for id in turnsNow { connections[id]?.resumeTurn() }
        turnsNow.removeAll(keepingCapacity: true)
    }

    private func runTasks() {
        var counter: UInt64 = 0
        _ = read(wakefd, &counter, 8)
        let batch = tasks.withLock { tasks -> [@Sendable (EventLoop) -> Void] in
            defer { tasks.removeAll(keepingCapacity: true) }
            return tasks
        }
        for task in batch { task(self) }
    }

    private func acceptConnections() {
        guard let listener else { return }
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let injected = shared.acceptProbe?.attempt() ?? 0
            let fd =
                injected != 0
                ? -1
                : withUnsafeMutablePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        accept4(listener.fd, $0, &length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
                    }
                }
            if injected != 0 { errno = injected }
            if fd < 0 {
                switch errno {
                case EAGAIN, EWOULDBLOCK: return
                case EINTR, ECONNABORTED: continue
                // Network errors of that one connection, which accept consumed (accept(2)).
                case EPROTO, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH, ENETDOWN: continue
                default:
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM...: the connection stays queued and the
                    // level-triggered listener readable, so retrying now would spin.
                    pauseAccepting(SocketError("accept4"))
                    return
                }
            }
            guard shared.reserveConnection() else {
                // Over the limit: a clean, short refusal rather than a silent reset.
                shared.overloadResponse.withUnsafeBytes { _ = send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(fd)
                continue
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let id = nextConnectionID
            nextConnectionID += 1
            let peer = SocketAddress.ipAddress(storage)
            let connection = Connection(id: id, fd: fd, peerAddress: peer, loop: self)
            do {
                try register(fd, token: id, events: EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue)
            } catch {
                close(fd)
                shared.releaseConnection()
                continue
            }
            connections[id] = connection
            connection.start(now: now)
        }
    }

    /// Takes the listener out of epoll for `acceptRetryDelay`; logs at most once per interval.
    private func pauseAccepting(_ error: SocketError) {
        guard let listener else { return }
        epoll_ctl(epfd, EPOLL_CTL_DEL, listener.fd, nil)
        let delay = shared.limits.acceptRetryDelay
        acceptPausedUntil = max(1, now &+ max(1_000_000, delay.nanoseconds))
        acceptFailuresUnreported += 1
        if let last = lastAcceptReport, now &- last < Self.acceptReportInterval { return }
        lastAcceptReport = now
        shared.log(.warning, "not accepting connections for \(delay): \(error) (\(acceptFailuresUnreported) "
            + "failure(s) since the last report; \(connections.count) open on this loop)")
        acceptFailuresUnreported = 0
    }

    /// Puts the listener back (level-triggered: waiting clients wake the loop at once).
    private func resumeAccepting() {
        acceptPausedUntil = 0
        guard let listener, !draining else { return }
        try? register(listener.fd, token: Self.listenerToken, events: EPOLLIN.rawValue)
    }

    /// Forgets a connection the connection itself has closed.
    func remove(_ connection: Connection) {
        connections[connection.id] = nil
        shared.releaseConnection()
        reportIfDrained()
    }

    /// Tells the server, once, that this loop has no connection left while draining.
    private func reportIfDrained() {
        guard draining, !reportedDrained, connections.isEmpty else { return }
        reportedDrained = true
        shared.loopDrained()
    }

    private func sweepTimeouts(now: UInt64) {
        for connection in connections.values where connection.deadline <= now {
            connection.timedOut()
        }
    }

    private func refreshDate() {
        let second = time(nil)
        if second != dateSecond {
            dateSecond = second
            dateLine = ResponseHeadEncoder.dateLine(secondsSince1970: second)
        }
    }

    private func register(_ fd: Int32, token: UInt64, events: UInt32) throws {
        var event = epoll_event()
        event.events = events
        event.data.u64 = token
        guard epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) == 0 else { throw SocketError("epoll_ctl") }
    }

    // MARK: - Shutdown

    /// Stops accepting, closes idle connections and asks busy ones to close after their
    /// current response. Reports to the server once no connection is left.
    func beginDraining() {
        guard !draining else { return }
        draining = true
        if let listener {
            epoll_ctl(epfd, EPOLL_CTL_DEL, listener.fd, nil)
        }
        listener = nil
        for connection in Array(connections.values) { connection.drain() }
        reportIfDrained()
    }

    var isDraining: Bool { draining }

    /// Ends the loop: remaining connections are closed at once.
    func stop() { running = false }
}

/// The thread-specific key that marks event-loop threads.
private let loopThreadKey: pthread_key_t = {
    var key = pthread_key_t()
    precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
    return key
}()
