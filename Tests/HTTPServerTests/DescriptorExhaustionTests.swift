import Foundation
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing
@testable import HTTPServer

/// When `accept` fails for want of descriptors, the loop pauses accepting instead of spinning
/// on the (level-triggered, still readable) listener, and resumes by itself. The failure is
/// injected through `AcceptProbe`: lowering RLIMIT_NOFILE here would starve the other tests in
/// this process. (`DescriptorLimitTests` in BlueLibraryServerTests does it for real, in a
/// child process.)
@Suite(.ownThreads) struct DescriptorExhaustionTests {
    final class LogLines: Sendable {
        private let lines = Mutex<[(HTTPServer.LogLevel, String)]>([])
        var logger: HTTPServer.Logger { { level, message in self.lines.withLock { $0.append((level, message)) } } }
        func matching(_ text: String) -> [(HTTPServer.LogLevel, String)] { lines.withLock { $0.filter { $0.1.contains(text) } } }
    }

    @Test func exhaustedDescriptorsPauseAcceptingInsteadOfSpinning() throws {
        let probe = AcceptProbe()
        let log = LogLines()
        var limits = HTTPServerLimits.forTests
        limits.acceptRetryDelay = .seconds(3600)  // no retry during this test
        let server = try TestServer(limits: limits, logger: log.logger, acceptProbe: probe)
        defer { server.stop() }
        let busy = try server.client()
        try busy.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try busy.readResponse().status == 200)

        // Given accept fails with EMFILE and a client waits in the backlog
        probe.failAccepts(with: EMFILE)
        let before = probe.attempts
        let waiting = try server.client()
        #expect(eventually { probe.attempts > before })

        // When the loop wakes up 50 times more for another connection
        for i in 0..<50 {
            try busy.send("GET /say?word=\(i) HTTP/1.1\r\nHost: test\r\n\r\n")
            #expect(try busy.readResponse().text == "\(i)")
        }

        // Then it did not try to accept again (a level-triggered listener would have woken it
        // for every one of those turns, and between them), and said so once.
        #expect(probe.attempts == before + 1)
        #expect(log.matching("not accepting").count == 1)
        #expect(log.matching("not accepting").first?.0 == .warning)
        _ = waiting
    }

    @Test func acceptingResumesByItselfWhenDescriptorsAreBack() throws {
        let probe = AcceptProbe()
        var limits = HTTPServerLimits.forTests
        limits.acceptRetryDelay = .milliseconds(20)
        let server = try TestServer(limits: limits, acceptProbe: probe)
        defer { server.stop() }

        probe.failAccepts(with: EMFILE)
        let waiting = try server.client()
        try waiting.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(eventually { probe.attempts > 0 })
        probe.failAccepts(with: 0)
        #expect(try waiting.readResponse().status == 200)
    }

    @Test func maxConnectionsAboveTheDescriptorLimitIsReportedAtStart() throws {
        let log = LogLines()
        var limits = HTTPServerLimits.forTests
        limits.maxConnections = Int(Int32.max)
        let server = try TestServer(limits: limits, logger: log.logger)
        defer { server.stop() }
        let warnings = log.matching("maxConnections")
        #expect(warnings.count == 1)
        #expect(warnings.first?.0 == .warning)
        #expect(server.server.descriptorLimit.map { $0 > 0 } == true)
    }
}
