import BlueLibraryTestSupport
import Foundation
import Glibc
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// A `GET /archive` client that stops reading must not hold its read snapshot (and an export
/// thread) forever, and further exports must not queue without a deadline.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads)
struct ExportPaceTests {
    /// A library big enough that its export (~10 MB) cannot hide in socket buffers.
    static func bigApp(_ policy: ExportPolicy) throws -> BlueLibraryApp {
        let app = try TestApp.make { $0.exports = policy }
        app.start()
        var json = #"{"format":"bluelibrary.archive","formatVersion":1,"albums":["#
        for number in 0..<40_000 {
            if number > 0 { json += "," }
            let id = "01J" + String(repeating: "0", count: 23 - String(number).count) + String(number)
            json += #"{"id":"\#(id)","title":"Album number \#(number) with a long enough title","artist":"Artist \#(number % 97) and friends","genre":"Rock","year":1999,"coverUrl":"https://covers.example.com/\#(number).png","createdAt":"2024-05-01T12:00:00.000Z","updatedAt":"2024-05-01T12:00:00.000Z"}"#
        }
        json += "],\"states\":[]}"
        // (The import of 40,000 albums takes a while on a busy machine: a minute bounds the wait.)
        let imported = try RawHTTPClient.request(port: app.port, method: "PUT", path: "/archive",
                                                 headers: ["Content-Type": "application/json"], body: Array(json.utf8),
                                                 receiveTimeout: 60)
        guard imported.status == 200 else { throw POSIXError(.EIO) }
        return app
    }

    /// Opens a connection with a tiny receive buffer and asks for the export, reading nothing.
    static func stalledExport(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var small: Int32 = 4096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        let request = Array("GET /archive HTTP/1.1\r\nHost: test\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        return fd
    }

    /// Waits (up to `seconds`) for `events` on `fd` without reading it; true when they came.
    static func wait(for events: Int32, on fd: Int32, seconds: Int) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(events), revents: 0)
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            let ready = poll(&entry, 1, 100)
            if ready > 0 && entry.revents & Int16(events) != 0 { return true }
        }
        return false
    }

    /// Reads until the server closes (true) or `seconds` pass without it (false).
    static func readsToClose(_ fd: Int32, within seconds: Int) -> (closed: Bool, tail: [UInt8]) {
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let deadline = ContinuousClock.now + .seconds(seconds)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var tail: [UInt8] = []
        while ContinuousClock.now < deadline {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { return (true, tail) }
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                return (true, tail)  // reset: closed as well
            }
            tail = Array((tail + buffer[0..<count]).suffix(16))
        }
        return (false, tail)
    }

    @Test func anExportWhoseClientStopsReadingIsCutOffAtTheMinimumRate() throws {
        let app = try Self.bigApp(ExportPolicy(minimumBytesPerSecond: 4 << 20, grace: .seconds(1)))
        defer { app.shutdown() }
        let fd = try Self.stalledExport(port: app.port)
        defer { close(fd) }
        // The export has started (its first bytes wait in the socket) ...
        #expect(Self.wait(for: Int32(POLLIN), on: fd, seconds: 10))
        // ... and the client reads nothing: far below 4 MiB/s after a 1 s grace, the server
        // closes its end. Its close sits behind bytes the client has not read, so this side sees
        // nothing until it reads; the server's connection count shows it at once.
        #expect(eventually(timeout: .seconds(30)) { app.server.connectionCount == 0 }, "the stalled export was never cut off")
        let (closed, tail) = Self.readsToClose(fd, within: 20)
        #expect(closed, "the stalled export was never cut off")
        // Cut off without the last chunk: the client cannot take it for a complete archive.
        let lastChunk = Array("0\r\n\r\n".utf8)
        #expect(Array(tail.suffix(lastChunk.count)) != lastChunk)
        // The slot came back: a reading client gets the whole export.
        let export = try RawHTTPClient.request(port: app.port, path: "/archive", receiveTimeout: 60)
        #expect(export.status == 200)
        #expect((try export.json()["albums"] as? [Any])?.count == 40_000)
    }

    @Test func exportsBeyondTheSlotsWaitAtMostTheQueueDeadlineThen503() throws {
        let app = try Self.bigApp(ExportPolicy(minimumBytesPerSecond: 1 << 20, grace: .seconds(30),
                                               queueDeadline: .milliseconds(300), maxWaiting: 1))
        defer { app.shutdown() }
        let first = try Self.stalledExport(port: app.port)
        let second = try Self.stalledExport(port: app.port)
        defer { close(first); close(second) }
        // Both hold a slot once their response has started.
        #expect(Self.wait(for: Int32(POLLIN), on: first, seconds: 10))
        #expect(Self.wait(for: Int32(POLLIN), on: second, seconds: 10))
        let refused = try RawHTTPClient.request(port: app.port, path: "/archive")
        #expect(refused.status == 503)
        #expect(refused.header("Retry-After") != nil)
        #expect(try refused.json()["type"] as? String == "urn:bluelibrary:problem:exports-busy")
    }
}
