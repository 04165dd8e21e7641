#if canImport(Glibc)
import Glibc
#endif
import Essentials
import Foundation
import Testing
import TestThreads
@testable import HTTPServer

/// Response heads encoded into a recycled buffer (``OutputQueue/append(recycling:_:)``), over a
/// real socket pair, and the router's route indices that per-route tables use.
@Suite(.ownThreads) struct RecycledOutputTests {
    let encoder = ResponseHeadEncoder(dateLine: Array("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n".utf8))

    /// A connected pair of stream sockets, closed when the test ends.
    final class SocketPair: Sendable {
        let writer: Int32
        let reader: Int32
        init() throws {
            var fds: [Int32] = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            writer = fds[0]
            reader = fds[1]
        }
        deinit {
            close(writer)
            close(reader)
        }
        func read(_ count: Int) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            var got = 0
            while got < count {
                let n = bytes.withUnsafeMutableBytes { recv(reader, $0.baseAddress! + got, count - got, 0) }
                if n <= 0 { break }
                got += n
            }
            return Array(bytes[0..<got])
        }
    }

    func response(_ tag: String) -> HTTPResponse {
        HTTPResponse(status: .notModified, headers: ["ETag": "\"\(tag)\"", "Cache-Control": "no-cache"])
    }

    @Test func aSentBufferIsReusedForTheNextResponse() throws {
        let sockets = try SocketPair()
        var queue = OutputQueue()
        var recycled: [UInt8] = []
        let expected = encoder.encode(response("a"), version: .http1_1, keepAlive: true, sendsBody: false).bytes
        _ = queue.append(recycling: &recycled) {
            encoder.encode(response("a"), version: .http1_1, keepAlive: true, sendsBody: false, into: &$0)
        }
        #expect(queue.queuedBytes == expected.count)
        let (result, written) = queue.flush(to: sockets.writer, recycling: &recycled)
        #expect(result == .done)
        #expect(written == expected.count)
        #expect(queue.isEmpty)
        #expect(sockets.read(expected.count) == expected)
        // The sent buffer came back; the next head is written into it.
        let capacity = recycled.capacity
        #expect(capacity >= expected.count)
        let before = recycled.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        _ = queue.append(recycling: &recycled) {
            #expect($0.isEmpty)
            #expect($0.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } == before)
            return encoder.encode(response("b"), version: .http1_1, keepAlive: true, sendsBody: false, into: &$0)
        }
        #expect(recycled.capacity == 0)
        _ = queue.flush(to: sockets.writer, recycling: &recycled)
        let second = encoder.encode(response("b"), version: .http1_1, keepAlive: true, sendsBody: false).bytes
        #expect(sockets.read(second.count) == second)
    }

    @Test func pipelinedResponsesJoinWhatIsStillQueuedInOrder() throws {
        let sockets = try SocketPair()
        var queue = OutputQueue()
        var recycled: [UInt8] = []
        var expected: [UInt8] = []
        for tag in ["1", "2", "3"] {
            expected += encoder.encode(response(tag), version: .http1_1, keepAlive: true, sendsBody: false).bytes
            _ = queue.append(recycling: &recycled) {
                encoder.encode(response(tag), version: .http1_1, keepAlive: true, sendsBody: false, into: &$0)
            }
        }
        #expect(queue.chunks.count == 1)
        #expect(queue.queuedBytes == expected.count)
        _ = queue.flush(to: sockets.writer, recycling: &recycled)
        #expect(sockets.read(expected.count) == expected)
    }

    @Test func bytesHandedInAreNeverRecycled() throws {
        // A stream payload may be shared by many connections: it must not become the buffer
        // the next head is written into.
        let sockets = try SocketPair()
        var queue = OutputQueue()
        var recycled: [UInt8] = []
        let shared = Array("data: x\n\n".utf8)
        queue.append(shared)
        let (result, written) = queue.flush(to: sockets.writer, recycling: &recycled)
        #expect(result == .done)
        #expect(written == shared.count)
        #expect(recycled.capacity == 0)
        #expect(sockets.read(shared.count) == shared)
        #expect(shared == Array("data: x\n\n".utf8))
    }

    /// A head never joins a buffer whose sent part is large, however little of it is left to
    /// send: a pipelining client that reads about as fast as it asks would otherwise keep one
    /// buffer growing for as long as the connection lives.
    @Test func aHeadDoesNotJoinAPartlySentLargeBuffer() throws {
        let sockets = try SocketPair()
        var small: Int32 = 4096
        try #require(setsockopt(sockets.writer, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size)) == 0)
        try #require(fcntl(sockets.writer, F_SETFL, fcntl(sockets.writer, F_GETFL) | O_NONBLOCK) == 0)
        var queue = OutputQueue()
        var recycled: [UInt8] = []
        let body = [UInt8](repeating: 0x62, count: 40 * 1024)
        queue.append(recycling: &recycled) { $0.append(contentsOf: body) }
        // Send it in socket-buffer steps until what is left fits the joining size.
        var received: [UInt8] = []
        while queue.queuedBytes > 8 * 1024 {
            _ = queue.flush(to: sockets.writer, recycling: &recycled)
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            let n = chunk.withUnsafeMutableBytes { recv(sockets.reader, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { received += chunk[0..<n] }
        }
        try #require(queue.queuedBytes > 0, "the last flush sent everything; the case needs a remainder")
        let head = encoder.encode(response("c"), version: .http1_1, keepAlive: true, sendsBody: false).bytes
        _ = queue.append(recycling: &recycled) {
            encoder.encode(response("c"), version: .http1_1, keepAlive: true, sendsBody: false, into: &$0)
        }
        #expect(queue.chunks.count == 2)
        // Everything still arrives, in order.
        while !queue.isEmpty {
            _ = queue.flush(to: sockets.writer, recycling: &recycled)
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            let n = chunk.withUnsafeMutableBytes { recv(sockets.reader, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { received += chunk[0..<n] }
        }
        while received.count < body.count + head.count {
            let rest = sockets.read(body.count + head.count - received.count)
            if rest.isEmpty { break }
            received += rest
        }
        #expect(received == body + head)
    }

    @Test func largeBuffersAreNotKept() throws {
        let sockets = try SocketPair()
        var queue = OutputQueue()
        var recycled: [UInt8] = []
        let body = [UInt8](repeating: 0x61, count: OutputQueue.recycledCapacityLimit + 1)
        queue.append(recycling: &recycled) { $0.append(contentsOf: body) }
        // The socket is blocking: a reader on another thread lets the one flush finish.
        let readerDone = DispatchSemaphore(value: 0)
        let reader = Thread {
            _ = sockets.read(body.count)
            readerDone.signal()
        }
        reader.start()
        let (result, written) = queue.flush(to: sockets.writer, recycling: &recycled)
        readerDone.wait()
        #expect(result == .done)
        #expect(written == body.count)
        #expect(recycled.capacity == 0)
    }

    @Test func resolutionsCarryTheirRouteTableIndex() {
        var routes = RouterBuilder()
        let handler: @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse = { _, _ in HTTPResponse() }
        routes.add(.get, "/a", handler)
        routes.add(.post, "/a", handler)
        routes.add(.get, "/a/{id}", handler)
        routes.add(.delete, "/a/{id}", handler)
        let router = routes.build()
        for (index, route) in router.routeTable.enumerated() {
            let path = Substring(route.pattern.replacingOccurrences(of: "{id}", with: "x"))
            let resolution = router.resolve(method: route.method, path: path)
            #expect(resolution.routeIndex == index, "\(route.method) \(route.pattern)")
            #expect(resolution.pattern == route.pattern)
        }
        // HEAD is answered by the GET route, under its index; 404 and 405 have none.
        #expect(router.resolve(method: .head, path: "/a/x").routeIndex == 2)
        #expect(router.resolve(method: .put, path: "/a").routeIndex == nil)
        #expect(router.resolve(method: .get, path: "/b").routeIndex == nil)
    }
}
