#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// Event streams whose clients stop reading hold a bounded amount of kernel memory: their
/// sockets' send buffers are capped (`--event-send-buffer`) and a stream whose unsent bytes
/// pass `--event-max-unsent` is dropped with a reset.
@Suite(.serialized, .timeLimit(.minutes(2)), .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ss")), .ownThreads)
struct EventSendBufferTests {
    /// What docs/operating.md states: at most this much kernel memory per subscriber that never reads
    /// (the default `--event-send-buffer` of 32 KiB, which Linux doubles, plus its bookkeeping).
    static let statedBytesPerSubscriber = 80 * 1024

    /// Kernel memory of the server's established sockets on `port` (the client sockets of the
    /// test are left out): each one's receive and send queues and what the kernel reserved for
    /// it, as `ss -m` reports them (`skmem` r, w and f).
    static func serverSocketMemory(port: Int) throws -> (bytes: Int, sockets: Int) {
        let outcome = try ChildProcess.run("/usr/bin/ss", ["-tmnH", "state", "established", "( sport = :\(port) )"],
                                           environment: ["PATH": "/usr/bin:/bin"], mergeStderr: true)
        let output = String(decoding: outcome.stdout, as: UTF8.self)
        try #require(outcome.status == 0, "ss failed: \(output)")
        var bytes = 0
        var sockets = 0
        for line in output.split(separator: "\n") {
            guard let open = line.range(of: "skmem:(") else { continue }
            let fields = line[open.upperBound...].prefix { $0 != ")" }.split(separator: ",")
            sockets += 1
            for field in fields {
                guard let key = field.first, "rwf".contains(key), let value = Int(field.dropFirst()) else { continue }
                bytes += value
            }
        }
        return (bytes, sockets)
    }

    static func request(_ port: Int, _ method: String, _ path: String, json: String? = nil) throws -> RawHTTPClient.Response {
        let headers = json == nil ? [:] : ["Content-Type": "application/json"]
        return try RawHTTPClient.request(port: port, method: method, path: path, headers: headers, body: Array((json ?? "").utf8))
    }

    @Test func twoThousandNonReadingStreamsStayWithinTheStatedKernelMemoryAndWritesAreAnswered() throws {
        let subscribers = 2000
        let server = try ServerProcess(arguments: ["--access-log", "off"], dataDirectory: TestApp.temporaryDirectory())
        let port = server.port
        let idle = try Self.serverSocketMemory(port: port)
        // Streams that send their request and never read again, held by a helper process:
        // 2,000 descriptors in this process would put every `Process.run` of a test running
        // beside this one at risk (see `ChildProcess`). Their receive buffers are small, so
        // the helper's side of loopback holds little and the bytes pile up on the server's
        // side, as with a distant client that stops reading.
        let streams = try NonReadingStreams(port: port, count: subscribers)
        defer { streams.close() }
        #expect(eventually(timeout: .seconds(20), pollingEvery: .milliseconds(50)) {
            (try? MetricsTests.scrape(port).value("bluelibrary_event_subscribers")) == Double(subscribers)
        })

        // Events flowing: each saved state is a state.changed of about 230 bytes to every
        // stream; 1,500 of them are more than --event-max-unsent (256 KiB) for each.
        let client = String(repeating: "c", count: 100)
        var peak = 0
        for write in 0..<1500 {
            let answer = try Self.request(port, "PUT", "/state?client=\(client)", json: #"{"currentAlbumIndex": \#(write % 5)}"#)
            #expect(answer.status == 200)
            if write % 100 == 99 { peak = max(peak, try Self.serverSocketMemory(port: port).bytes) }
        }
        peak = max(peak, try Self.serverSocketMemory(port: port).bytes)

        // An innocent write is answered while the streams hold what they hold.
        let innocent = try Self.request(port, "POST", "/albums", json: #"{"title": "Innocent", "artist": "Bystander"}"#)
        #expect(innocent.status == 201)
        // The events reach the streams on the delivery threads, after the writes are answered:
        // on a busy machine the drops come a little later.
        var dropped = 0.0
        _ = eventually(timeout: .seconds(20), pollingEvery: .milliseconds(50)) {
            dropped = (try? MetricsTests.scrape(port).value("bluelibrary_event_streams_dropped_total")) ?? 0
            return dropped > 0
        }
        let held = peak - idle.bytes
        print("[events] \(subscribers) non-reading streams: server sockets' kernel memory peak \(held / 1024) KiB, "
            + "\(held / subscribers) bytes each (stated at most \(Self.statedBytesPerSubscriber)); \(Int(dropped)) dropped")
        #expect(held <= subscribers * Self.statedBytesPerSubscriber,
                "\(held / subscribers) bytes per non-reading subscriber, more than the stated \(Self.statedBytesPerSubscriber)")
        #expect(dropped > 0, "streams past --event-max-unsent are dropped")
    }
}

/// `count` connections to `port` that each ask for `/events` and never read, held open by a
/// python3 child process until ``close()``.
final class NonReadingStreams {
    private let process: RunningChild

    struct HolderFailed: Error, CustomStringConvertible {
        let description: String
    }

    static let script = """
        import resource, socket, sys, time
        port, count = int(sys.argv[1]), int(sys.argv[2])
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < count + 64:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 64), hard))
        held = []
        for _ in range(count):
            stream = socket.socket()
            stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stream.connect(("127.0.0.1", port))
            stream.sendall(b"GET /events HTTP/1.1\\r\\nHost: test\\r\\n\\r\\n")
            held.append(stream)
        print("ready", flush=True)
        while True:
            time.sleep(3600)  # until SIGTERM
        """

    init(port: Int, count: Int) throws {
        process = try RunningChild(
            "/usr/bin/env", ["python3", "-c", Self.script, String(port), String(count)],
            environment: ProcessInfo.processInfo.environment, captureOutput: true)
        let line = process.readOutput { $0.hasSuffix("\n") }
        guard line == "ready\n" else {
            close()
            throw HolderFailed(description: "the python3 stream holder did not get its \(count) streams open: \(line)")
        }
    }

    /// Ends the helper (SIGTERM), which closes the streams, and waits for it.
    func close() {
        process.terminate()
        process.waitUntilExit()
        if let fd = process.output { Glibc.close(fd) }
    }
}

