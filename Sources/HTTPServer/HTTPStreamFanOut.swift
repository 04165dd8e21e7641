import Dispatch
import Essentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Bytes for a streaming response, framed once for every connection that gets them: as an
/// HTTP/1.1 chunk (size line, bytes, CRLF) and as they are (HTTP/1.0, where the body ends with
/// the connection). Handing the same payload to many streams shares its storage: a connection
/// with nothing else queued sends straight from it, without a copy.
public struct HTTPStreamPayload: Sendable {
    /// The bytes as given (the body bytes each stream gets).
    public let bytes: [UInt8]
    /// The same bytes as one HTTP/1.1 chunk.
    let chunk: [UInt8]

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        let size = Array(String(bytes.count, radix: 16).utf8)
        var chunk: [UInt8] = []
        chunk.reserveCapacity(size.count + bytes.count + 4)
        chunk += size
        chunk += [0x0D, 0x0A]
        chunk += bytes
        chunk += [0x0D, 0x0A]
        self.chunk = chunk
    }

    public var count: Int { bytes.count }
    public var isEmpty: Bool { bytes.isEmpty }
}

/// What one ``HTTPStreamWriter/fanOut(_:to:limit:checkEvery:)`` did.
public struct HTTPStreamFanOutReport: Sendable {
    /// Streams the payload was queued for (each gets it in one write).
    public var writes = 0
    /// Positions (in the writers given) of the streams that were already closed.
    public var closed: [Int] = []
    /// Positions of the streams dropped because the loops did not queue the payload within
    /// the fan-out's `limit` (a stopped or wedged loop): they are closed.
    public var dropped: [Int] = []
    /// CPU time the event loops spent queueing and sending the payload, all loops together.
    public var loopCPU: Duration = .zero
    /// Requests dispatched, while the fan-out ran, on the loops it wrote through (0: nothing
    /// competed with it).
    public var requests = 0
    /// False when the loops did not get to their share: every stream closed meanwhile (the
    /// server stopped), or `limit` passed and the rest were dropped.
    public var completed = true
}

extension HTTPStreamWriter {
    /// Writes `payload` to every stream of `writers` with a few tasks per event loop (not one
    /// per stream) and waits until the loops have queued it: each connection appends the shared
    /// bytes and sends what it has, one `send` per stream. A loop takes ``fanOutSlice`` streams
    /// per task and queues the next slice behind the requests that became ready meanwhile, so a
    /// fan-out to thousands of streams does not hold up the loop's other connections. A stream
    /// whose client reads too slowly is dropped as by ``write(_:)`` (its queue passed
    /// `maxQueuedStreamBytes`), never waited for.
    ///
    /// Waiting for the loops is what lets a publisher coalesce: whatever it gets meanwhile goes
    /// out together in its next fan-out, and what keeps each stream's payloads in order (the
    /// next fan-out starts after this one's last slice). It must not run on an event loop (it
    /// would wait for itself): that is a precondition. It stops waiting when every stream is
    /// closed (a loop that stops closes its connections first), and at the latest after
    /// `limit`: a loop that has not queued the payload by then is stopped or wedged, so every
    /// stream of the call still open is logged, marked closed and dropped (their `onClose`
    /// handlers run on this thread) and its connection closed if the loop ever runs again.
    /// `checkEvery` is how often it looks.
    public static func fanOut(_ payload: HTTPStreamPayload, to writers: [HTTPStreamWriter],
                              limit: Duration = .seconds(30), checkEvery: Duration = .seconds(1)) -> HTTPStreamFanOutReport {
        precondition(!EventLoop.isCurrentThreadALoop, "HTTPStreamWriter.fanOut called on an event loop: it would wait for itself")
        var report = HTTPStreamFanOutReport()
        guard !payload.isEmpty, !writers.isEmpty else { return report }
        let shared = writers[0].loop.shared
        var byLoop: [ObjectIdentifier: (loop: EventLoop, ids: [UInt64])] = [:]
        for (position, writer) in writers.enumerated() {
            guard writer.reserve(payload.count) else {
                report.closed.append(position)
                continue
            }
            report.writes += 1
            byLoop[ObjectIdentifier(writer.loop), default: (writer.loop, [])].ids.append(writer.connectionID)
        }
        guard !byLoop.isEmpty else { return report }
        // Requests dispatched meanwhile on the loops this fan-out writes through.
        func requestsDispatched() -> Int {
            byLoop.values.reduce(0) { $0 &+ $1.loop.requestsDispatched.load(ordering: .relaxed) }
        }
        let requestsBefore = requestsDispatched()
        let done = DispatchGroup()
        let cpu = CPUTally()
        for (_, share) in byLoop {
            done.enter()
            writeSlice(payload, to: share.ids, from: 0, on: share.loop, cpu: cpu, done: done)
        }
        let deadline = ContinuousClock.now + limit
        while done.wait(timeout: .now(plus: min(checkEvery, max(deadline - ContinuousClock.now, .nanoseconds(1))))) == .timedOut {
            if writers.allSatisfy(\.isClosed) {
                report.completed = false
                break
            }
            if ContinuousClock.now >= deadline {
                report.completed = false
                report.dropped = drop(writers, limit: limit, shared: shared)
                break
            }
        }
        report.loopCPU = .nanoseconds(cpu.nanoseconds.load(ordering: .relaxed))
        report.requests = requestsDispatched() &- requestsBefore
        return report
    }

    /// A fan-out ran past its limit: closes every stream of it still open; returns their
    /// positions.
    private static func drop(_ writers: [HTTPStreamWriter], limit: Duration, shared: ServerShared) -> [Int] {
        var dropped: [Int] = []
        for (position, writer) in writers.enumerated() where !writer.isClosed {
            dropped.append(position)
            writer.abort()
            writer.markClosed()
        }
        shared.log(.error, "event loops did not write a stream payload within \(limit): dropped \(dropped.count) of its \(writers.count) streams")
        return dropped
    }

    /// Streams one event-loop task writes to before it lets the loop serve its other
    /// connections.
    static let fanOutSlice = 128

    /// Writes the payload to `ids[start...]` on `loop`, a slice per task.
    private static func writeSlice(_ payload: HTTPStreamPayload, to ids: [UInt64], from start: Int, on loop: EventLoop,
                                   cpu: CPUTally, done: DispatchGroup) {
        loop.execute { loop in
            let began = threadCPUNanoseconds()
            let end = min(start + fanOutSlice, ids.count)
            for id in ids[start..<end] { loop.connection(id)?.streamWrite(payload) }
            cpu.nanoseconds.wrappingAdd(threadCPUNanoseconds() - began, ordering: .relaxed)
            if end < ids.count {
                // Behind whatever the loop has to do meanwhile (it runs this after its next wait).
                writeSlice(payload, to: ids, from: end, on: loop, cpu: cpu, done: done)
            } else {
                done.leave()
            }
        }
    }
}

/// The loops' CPU time for one fan-out, added up as they finish.
private final class CPUTally: Sendable {
    let nanoseconds = Atomic<Int64>(0)
}

/// CPU time the calling thread has used so far, in nanoseconds.
public func threadCPUNanoseconds() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
}
