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

/// What one ``HTTPStreamWriter/fanOut(_:to:)`` did.
public struct HTTPStreamFanOutReport: Sendable {
    /// Streams the payload was queued for (each gets it in one write).
    public var writes = 0
    /// Positions (in the writers given) of the streams that were already closed.
    public var closed: [Int] = []
    /// CPU time the event loops spent queueing and sending the payload, all loops together.
    public var loopCPU: Duration = .zero
    /// False when the loops did not get to their share before every stream closed (the server
    /// stopped).
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
    /// next fan-out starts after this one's last slice). Never call it on an event loop (it
    /// would wait for itself). It stops waiting only when every stream is closed (a loop that
    /// stops runs no more tasks, but closes its connections first); `checkEvery` is how often
    /// it looks.
    public static func fanOut(_ payload: HTTPStreamPayload, to writers: [HTTPStreamWriter],
                              checkEvery: Duration = .seconds(1)) -> HTTPStreamFanOutReport {
        var report = HTTPStreamFanOutReport()
        guard !payload.isEmpty, !writers.isEmpty else { return report }
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
        let done = DispatchGroup()
        let cpu = CPUTally()
        for (_, share) in byLoop {
            done.enter()
            writeSlice(payload, to: share.ids, from: 0, on: share.loop, cpu: cpu, done: done)
        }
        while done.wait(timeout: .now(plus: checkEvery)) == .timedOut {
            if writers.allSatisfy(\.isClosed) {
                report.completed = false
                break
            }
        }
        report.loopCPU = .nanoseconds(cpu.nanoseconds.load(ordering: .relaxed))
        return report
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
