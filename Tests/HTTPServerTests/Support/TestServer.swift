import Dispatch
import Foundation
import Synchronization
import HTTPTestSupport
@testable import HTTPServer

extension HTTPServerLimits {
    /// Generous limits with short timeouts: tests that exercise a timeout shorten it further.
    static var forTests: HTTPServerLimits {
        var limits = HTTPServerLimits()
        limits.headTimeout = .seconds(3)
        limits.idleTimeout = .seconds(5)
        limits.bodyTimeout = .seconds(3)
        limits.writeTimeout = .seconds(3)
        return limits
    }
}

/// An `HTTPServer` on 127.0.0.1 and an ephemeral port, with a few routes every test may use:
///
/// - `GET /hello`: `hello, world\n` as text/plain
/// - `POST /echo`: the request body, with the request's Content-Type
/// - `GET /say?word=W`: `W`
final class TestServer: Sendable {
    let server: HTTPServer
    let router: Router
    var port: Int { server.port }

    init(
        limits: HTTPServerLimits = .forTests, eventLoops: Int = 1, workerThreads: Int = 4, workerQueueLimit: Int = 1024,
        headCheck: HeadCheck? = nil, errorRenderer: ErrorRenderer = .standard,
        routes configure: (inout RouterBuilder) -> Void = { _ in },
        logger: @escaping HTTPServer.Logger = { _, _ in }, acceptProbe: AcceptProbe? = nil
    ) throws {
        var builder = RouterBuilder()
        builder.add(.get, "/hello") { _, _ in
            HTTPResponse(contentType: "text/plain", bytes: Array("hello, world\n".utf8))
        }
        builder.add(.post, "/echo") { request, _ in
            HTTPResponse(
                contentType: request.headers["Content-Type"] ?? "application/octet-stream", bytes: request.body)
        }
        builder.add(.get, "/say") { request, _ in
            HTTPResponse(contentType: "text/plain", bytes: Array((request.query("word") ?? "").utf8))
        }
        builder.errorRenderer = errorRenderer
        configure(&builder)
        router = builder.build()
        server = try HTTPServer(
            configuration: .init(
                host: "127.0.0.1", port: 0, eventLoops: eventLoops, workerThreads: workerThreads,
                workerQueueLimit: workerQueueLimit, limits: limits),
            router: router, errorRenderer: errorRenderer, logger: logger, headCheck: headCheck, acceptProbe: acceptProbe)
        server.start()
    }

    func client(timeout: Double = 5, receiveBufferSize: Int32? = nil, source: String? = nil) throws -> RawHTTPClient {
        try RawHTTPClient(port: port, source: source, receiveTimeout: timeout, receiveBufferSize: receiveBufferSize)
    }

    /// Idempotent; tests call it in a `defer`.
    func stop() { server.shutdown(grace: .seconds(2)) }
}

/// A barrier a `.workerPool` handler waits at until the test opens it. The handler gives up
/// after 10 s so a failing test cannot wedge the worker pool forever.
final class Gate: Sendable {
    private let arrived = DispatchSemaphore(value: 0)
    private let opened = DispatchSemaphore(value: 0)

    /// Called by the handler.
    func pass() {
        arrived.signal()
        _ = opened.wait(timeout: .now() + 10)
    }

    /// Waits until a handler is at the gate.
    func waitForArrival(seconds: Double = 5) -> Bool {
        arrived.wait(timeout: .now() + seconds) == .success
    }

    func open() { opened.signal() }
}

/// A value handed from one thread to another.
final class Handoff<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    func put(_ newValue: Value) {
        value.withLock { $0 = newValue }
        ready.signal()
    }

    func take(seconds: Double = 5) -> Value? {
        guard ready.wait(timeout: .now() + seconds) == .success else { return nil }
        return value.withLock { $0 }
    }
}

/// Runs `body` on a new thread; `join` waits for it.
final class BackgroundThread: Sendable {
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () -> Void) {
        Thread.detachNewThread { [done] in
            body()
            done.signal()
        }
    }

    /// True if the thread finished within `seconds`.
    func join(seconds: Double) -> Bool {
        guard done.wait(timeout: .now() + seconds) == .success else { return false }
        done.signal()  // so that later joins see it too
        return true
    }

    /// True if the thread has finished already.
    var isFinished: Bool { join(seconds: 0) }
}

extension String {
    var bytes: [UInt8] { Array(utf8) }
}

/// The first index where two byte arrays differ (a length difference counts), or nil. Keeps
/// failure messages short where comparing whole arrays would print hundreds of kilobytes.
func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> Int? {
    for i in 0..<min(a.count, b.count) where a[i] != b[i] { return i }
    return a.count == b.count ? nil : min(a.count, b.count)
}
