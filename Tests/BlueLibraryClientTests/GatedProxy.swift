#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPTestSupport

/// An HTTP/1.1 proxy in front of the real app that can hold requests at a gate, so tests decide
/// exactly when an answer arrives (a load is provably still running while the test calls the
/// model again). It records every request it sees. Open by default; `gated = true` makes each
/// request wait for a `release()`. Answers are forwarded unchanged, re-framed with Content-Length.
/// A client that closes its connection while its request is held is counted (`hangUps`): the
/// proof that a cancelled request's transfer was aborted, not left running. `dropAnswers` loses
/// answers after the server applied the request (the connection closes instead).
final class GatedProxy: @unchecked Sendable {
    struct Seen: Sendable {
        var method: String
        var target: String
        var headers: [String: String]  // names lower-cased
    }

    // Everything mutable is guarded by `condition`.
    private let condition = NSCondition()
    private var seenRequests: [Seen] = []
    private var isGated = false
    private var releases = 0
    private var hangUpCount = 0
    private var closed = false
    private var answersToDrop: [String: Int] = [:]
    private var droppedAnswerCount = 0
    private let listener: Int32
    let port: Int
    let upstreamPort: Int

    init(upstreamPort: Int) throws {
        self.upstreamPort = upstreamPort
        (listener, port) = try loopbackListener()
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    deinit { close() }

    func close() {
        condition.lock()
        let wasClosed = closed
        closed = true
        condition.broadcast()
        condition.unlock()
        if !wasClosed {
            shutdown(listener, Int32(SHUT_RDWR))
            Glibc.close(listener)
        }
    }

    /// While true, each request waits for a `release()` before it is forwarded.
    var gated: Bool {
        get { condition.withLock { isGated } }
        set { condition.withLock { isGated = newValue; condition.broadcast() } }
    }

    /// Lets one held request (the oldest) through.
    func release(_ count: Int = 1) {
        condition.withLock {
            releases += count
            condition.broadcast()
        }
    }

    var requests: [Seen] { condition.withLock { seenRequests } }

    /// The server's answers to the next `count` requests with `method` are lost: each request is
    /// forwarded and applied, then the client's connection is closed instead of answered.
    func dropAnswers(to method: String, count: Int = 1) {
        condition.withLock { answersToDrop[method, default: 0] += count }
    }

    /// Answers thrown away so far (see `dropAnswers`).
    var droppedAnswers: Int { condition.withLock { droppedAnswerCount } }

    /// Connections the client closed while their request was held at the gate.
    var hangUps: Int { condition.withLock { hangUpCount } }

    /// Waits until `count` held requests have been given up by their client (connection closed).
    @discardableResult
    func waitForHangUps(_ count: Int, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while hangUpCount < count {
            if !condition.wait(until: deadline) { return hangUpCount >= count }
        }
        return true
    }

    /// Waits until `count` requests have arrived in total.
    @discardableResult
    func waitForRequests(_ count: Int, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while seenRequests.count < count {
            if !condition.wait(until: deadline) { return seenRequests.count >= count }
        }
        return true
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if condition.withLock({ closed }) { return }
                if errno == EINTR { continue }
                return
            }
            Thread.detachNewThread { [self] in serve(fd) }
        }
    }

    private func serve(_ fd: Int32) {
        defer { Glibc.close(fd) }
        var buffer: [UInt8] = []
        while true {
            guard let headEnd = readUntilBlankLine(fd, &buffer) else { return }
            let head = String(decoding: buffer[0..<headEnd], as: UTF8.self)
            buffer.removeFirst(headEnd + 4)
            var lines = head.components(separatedBy: "\r\n")
            let requestLine = lines.removeFirst().split(separator: " ")
            guard requestLine.count >= 2 else { return }
            var headers: [String: String] = [:]
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let length = headers["content-length"].flatMap(Int.init) ?? 0
            while buffer.count < length {
                guard fill(fd, &buffer) else { return }
            }
            let body = Array(buffer[0..<length])
            buffer.removeFirst(length)
            let seen = Seen(method: String(requestLine[0]), target: String(requestLine[1]), headers: headers)

            condition.lock()
            seenRequests.append(seen)
            condition.broadcast()
            // Held: watch the client's socket between looks at the gate, so a client that gives
            // up (closes the connection) is noticed at once.
            while isGated && releases == 0 && !closed {
                condition.unlock()
                let hungUp = peerClosed(fd, waitMilliseconds: 20)
                condition.lock()
                if hungUp {
                    hangUpCount += 1
                    condition.broadcast()
                    condition.unlock()
                    return
                }
            }
            if isGated && releases > 0 { releases -= 1 }
            let stop = closed
            condition.unlock()
            if stop { return }

            var forwarded = headers
            for name in ["host", "connection", "content-length"] { forwarded[name] = nil }
            guard let response = try? RawHTTPClient.request(port: upstreamPort, method: seen.method, path: seen.target,
                                                             headers: forwarded, body: body)
            else { return }
            let drop = condition.withLock { () -> Bool in
                guard let left = answersToDrop[seen.method], left > 0 else { return false }
                answersToDrop[seen.method] = left - 1
                droppedAnswerCount += 1
                return true
            }
            if drop { return }  // the server applied it; the client never hears
            var out = response.statusLine + "\r\n"
            for (name, value) in response.headers where !["content-length", "transfer-encoding", "connection"].contains(name.lowercased()) {
                out += "\(name): \(value)\r\n"
            }
            if response.status != 304 { out += "Content-Length: \(response.body.count)\r\n" }
            out += "\r\n"
            let bytes = Array(out.utf8) + (response.status == 304 ? [] : response.body)
            guard write(fd, bytes) else { return }
        }
    }

    /// Whether the client closed (or reset) the connection, waiting at most `waitMilliseconds`
    /// for it to happen. Only the hang-up is watched (POLLRDHUP), so bytes of a next request
    /// neither count nor make the wait return early.
    private func peerClosed(_ fd: Int32, waitMilliseconds: Int32) -> Bool {
        let readHangUp: Int16 = 0x2000  // POLLRDHUP: Linux, and hidden from Swift without _GNU_SOURCE
        var watched = pollfd(fd: fd, events: readHangUp, revents: 0)
        guard poll(&watched, 1, waitMilliseconds) > 0 else { return false }
        return watched.revents & (readHangUp | Int16(POLLHUP) | Int16(POLLERR)) != 0
    }

    private func readUntilBlankLine(_ fd: Int32, _ buffer: inout [UInt8]) -> Int? {
        while true {
            if buffer.count >= 4 {
                for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
                    return i
                }
            }
            guard fill(fd, &buffer) else { return nil }
        }
    }

    private func fill(_ fd: Int32, _ buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16384)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return false }
        buffer += chunk[0..<n]
        return true
    }

    private func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }
}
