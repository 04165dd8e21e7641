#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryServer
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// The real executable as operators run it: flags, logs on stdout, signals, exit codes.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct ProcessTests {
    /// The server a test starts holds none of the test process's descriptors (a socket a test
    /// closes must be closed for the server too), even one opened without close-on-exec.
    @Test func theServerInheritsNoDescriptorOfTheTests() throws {
        let held = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(held >= 0)
        defer { close(held) }
        let target = { (path: String) -> String? in
            var buffer = [CChar](repeating: 0, count: 256)
            let length = readlink(path, &buffer, buffer.count - 1)
            return length > 0 ? String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
        }
        let socketName = try #require(target("/proc/self/fd/\(held)"))
        let server = try ServerProcess(dataDirectory: TestApp.temporaryDirectory())
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(server.process.processIdentifier)/fd")
        let targets = descriptors.compactMap { target("/proc/\(server.process.processIdentifier)/fd/\($0)") }
        #expect(!targets.isEmpty)
        #expect(!targets.contains(socketName), "the server holds the test's \(socketName)")
    }

    @Test func servesHealthAndLogsOneJSONLinePerRequest() throws {
        let server = try ServerProcess(dataDirectory: TestApp.temporaryDirectory())
        let response = try RawHTTPClient.request(port: server.port, path: "/healthz", headers: ["X-Request-Id": "trace-42"])
        #expect(response.status == 200)
        #expect(response.text == "{\"status\":\"ok\"}\n")
        #expect(response.header("X-Request-Id") == "trace-42")
        #expect(response.header("Date")?.hasSuffix(" GMT") == true)

        let generated = try RawHTTPClient.request(port: server.port, path: "/nowhere")
        #expect(generated.status == 404)
        #expect(generated.header("Content-Type") == "application/problem+json")
        let requestID = try #require(generated.header("X-Request-Id"))
        #expect(!requestID.isEmpty && requestID != "trace-42")

        // The access log line is JSON with what an operator needs.
        var line: [String: Any]?
        eventually {
            line = server.logLines().compactMap { text -> [String: Any]? in
                guard text.contains("\"requestId\":\"\(requestID)\"") else { return nil }
                return try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            }.first
            return line != nil
        }
        let entry = try #require(line)
        #expect(entry["method"] as? String == "GET")
        #expect(entry["path"] as? String == "/nowhere")
        #expect(entry["status"] as? Int == 404)
        #expect(entry["client"] as? String == "127.0.0.1")
        #expect(entry["durationMs"] is Double)
        #expect((entry["bytes"] as? Int ?? 0) > 0)
    }

    @Test func forwardedAddressIsLoggedOnlyFromATrustedProxy() throws {
        let trusting = try ServerProcess(arguments: ["--trusted-proxies", "127.0.0.1/32"], dataDirectory: TestApp.temporaryDirectory())
        _ = try RawHTTPClient.request(port: trusting.port, path: "/healthz", headers: ["X-Forwarded-For": "203.0.113.50", "X-Request-Id": "fwd-1"])
        let distrusting = try ServerProcess(dataDirectory: TestApp.temporaryDirectory())
        _ = try RawHTTPClient.request(port: distrusting.port, path: "/healthz", headers: ["X-Forwarded-For": "203.0.113.50", "X-Request-Id": "fwd-2"])
        // The access log line is written after the response: waited for, each until it is there.
        #expect(eventually { trusting.logLines().contains { $0.contains("\"requestId\":\"fwd-1\"") } })
        #expect(eventually { distrusting.logLines().contains { $0.contains("\"requestId\":\"fwd-2\"") } })
        #expect(trusting.logLines().contains { $0.contains("\"requestId\":\"fwd-1\"") && $0.contains("\"client\":\"203.0.113.50\"") })
        #expect(distrusting.logLines().contains { $0.contains("\"requestId\":\"fwd-2\"") && $0.contains("\"client\":\"127.0.0.1\"") })
    }

    @Test func badConfigurationStopsWithOneLineAndExitCode2() throws {
        let (status, output) = try ServerProcess.run(["serve", "--port", "99999"])
        #expect(status == 2)
        #expect(output == "bluelibrary: --port: port must be a whole number from 0 to 65535, not '99999'\n")
        let (envStatus, envOutput) = try ServerProcess.run(["serve"], environment: ["BLUELIBRARY_LOG_LEVEL": "chatty"])
        #expect(envStatus == 2)
        #expect(envOutput.hasPrefix("bluelibrary: BLUELIBRARY_LOG_LEVEL:"))
        let (helpStatus, help) = try ServerProcess.run(["serve", "--help"])
        #expect(helpStatus == 0)
        #expect(help.contains("BLUELIBRARY_PORT"))
    }

    @Test func healthcheckAsksThePortTheServerReallyBound() throws {
        // Given a server on a port nobody could guess (--port 0) while BLUELIBRARY_PORT names another
        let data = TestApp.temporaryDirectory()
        let elsewhere = try NginxProxy.freePort()
        let server = try ServerProcess(environment: ["BLUELIBRARY_PORT": "\(elsewhere)"], dataDirectory: data)
        let environment = ["BLUELIBRARY_DATA_DIR": data, "BLUELIBRARY_PORT": "\(elsewhere)"]
        let file = ListeningAddressFile.path(dataDirectory: data)
        // (written just after the "listening" line the process runner waits for)
        #expect(eventually { ListeningAddressFile.read(from: file) != nil })
        let announced = try #require(ListeningAddressFile.read(from: file))
        #expect(announced.port == server.port && announced.host == "127.0.0.1")
        #expect(announced.pid == server.process.processIdentifier)

        // the healthcheck finds it through the data directory (variable or flag),
        #expect(try ServerProcess.run(["healthcheck"], environment: environment).0 == 0)
        #expect(try ServerProcess.run(["healthcheck", "--data-dir", data]).0 == 0)
        // an explicit --port still wins, and a wrong one fails naming where it asked,
        let (wrongStatus, wrongOutput) = try ServerProcess.run(["healthcheck", "--port", "\(elsewhere)"], environment: environment)
        #expect(wrongStatus == 1)
        #expect(wrongOutput.contains("no answer from 127.0.0.1:\(elsewhere)/readyz (--port)"), "\(wrongOutput)")
        // and a data directory without the file falls back to BLUELIBRARY_PORT (nobody there).
        let (fallbackStatus, fallbackOutput) = try ServerProcess.run(
            ["healthcheck"], environment: ["BLUELIBRARY_DATA_DIR": TestApp.temporaryDirectory(), "BLUELIBRARY_PORT": "\(elsewhere)"])
        #expect(fallbackStatus == 1)
        #expect(fallbackOutput.contains("127.0.0.1:\(elsewhere)/readyz (BLUELIBRARY_PORT; no "), "\(fallbackOutput)")

        // When the server stops cleanly, the file goes and the healthcheck fails.
        server.signal(SIGTERM)
        #expect(server.waitForExit(timeout: 20) == 0)
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(try ServerProcess.run(["healthcheck"], environment: environment).0 == 1)
    }

    @Test func healthcheckFailsAgainstAStaleAddressFileAndAWedgedServer() throws {
        // A file left by a crash names a port nobody answers on: unhealthy, not a fallback.
        let data = TestApp.temporaryDirectory()
        let port = try NginxProxy.freePort()
        try ListeningAddressFile(host: "0.0.0.0", port: port, pid: 999_999).write(to: ListeningAddressFile.path(dataDirectory: data))
        let (status, output) = try ServerProcess.run(["healthcheck"], environment: ["BLUELIBRARY_DATA_DIR": data, "BLUELIBRARY_PORT": "1"])
        #expect(status == 1)
        #expect(output.contains("no answer from 127.0.0.1:\(port)/readyz"), "\(output)")

        // A stopped (SIGSTOP) server accepts connections in the kernel but never answers.
        let server = try ServerProcess(dataDirectory: data)
        // (the server replaces the stale file just after its "listening" line)
        #expect(eventually { ListeningAddressFile.read(from: ListeningAddressFile.path(dataDirectory: data))?.port == server.port })
        #expect(try ServerProcess.run(["healthcheck", "--data-dir", data]).0 == 0)
        server.signal(SIGSTOP)
        defer { server.signal(SIGCONT) }
        let (wedged, wedgedOutput) = try ServerProcess.run(["healthcheck", "--data-dir", data])
        #expect(wedged == 1)
        #expect(wedgedOutput.contains("no answer"), "\(wedgedOutput)")
    }

    /// A connection with `partialHead` in the server's hands, not just in its socket: sent in one
    /// segment behind a whole request, and the answer to that request shows the server has read
    /// the segment (one `recv`), so the half head is in flight rather than unread input.
    static func halfAHeadInFlight(port: Int, _ partialHead: String) throws -> RawHTTPClient {
        let client = try RawHTTPClient(port: port)
        try client.send("GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n" + partialHead)
        let first = try client.readResponse()
        guard first.status == 200 else { throw RawHTTPClient.ClientError("healthz answered \(first.status)") }
        return client
    }

    @Test func sigtermDrainsInFlightRequestsThenExitsZero() throws {
        let server = try ServerProcess(arguments: ["--shutdown-grace", "10"], dataDirectory: TestApp.temporaryDirectory())
        // Given a request in flight (half its head sent) and an idle keep-alive connection
        let inFlight = try Self.halfAHeadInFlight(port: server.port, "GET /readyz HTTP/1.1\r\nHost: test\r\n")
        let idle = try RawHTTPClient(port: server.port)
        try idle.send("GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try idle.readResponse().status == 200)

        // When SIGTERM arrives
        server.signal(SIGTERM)

        // Then the idle connection is closed, new connections are refused,
        #expect(idle.isClosedByServer())
        #expect(eventually { RawHTTPClient.probe(port: server.port) == ECONNREFUSED }, "the listening port closes")
        #expect(server.process.isRunning)
        // the in-flight request is answered (not ready: draining) with Connection: close,
        try inFlight.send("\r\n")
        let response = try inFlight.readResponse()
        #expect(response.status == 503)
        #expect(response.header("Connection") == "close")
        #expect(response.header("Retry-After") != nil)
        // and the process exits 0.
        #expect(server.waitForExit(timeout: 10) == 0)
        #expect(server.logText.contains("\"message\":\"stopped\""))
    }

    @Test func secondSignalExitsAtOnce() throws {
        let server = try ServerProcess(arguments: ["--shutdown-grace", "60"], dataDirectory: TestApp.temporaryDirectory())
        let inFlight = try Self.halfAHeadInFlight(port: server.port, "GET /healthz HTTP/1.1\r\n")
        server.signal(SIGTERM)
        // The first signal is handled (the listening port closes) and waits for the in-flight request.
        #expect(eventually { RawHTTPClient.probe(port: server.port) == ECONNREFUSED }, "the listening port closes")
        #expect(server.process.isRunning, "the first signal waits for the in-flight request")
        server.signal(SIGINT)
        let status = server.waitForExit(timeout: 5)
        #expect(status == 1)
        withExtendedLifetime(inFlight) {}
    }

    /// A stop signal sent the moment the server says "listening" (as a supervisor that stops
    /// what it just started does) is not lost: the server drains and exits 0. (It once was:
    /// the handler was registered asynchronously, with the signal ignored until then.)
    @Test func aSignalRightAfterListeningIsNotLost() throws {
        let servers = try (0..<4).map { _ in
            try ServerProcess(dataDirectory: TestApp.temporaryDirectory(), waitUntilListening: false)
        }
        for (index, server) in servers.enumerated() {
            try server.waitUntilListening()
            server.signal(index.isMultiple(of: 2) ? SIGTERM : SIGINT)
        }
        for server in servers {
            #expect(server.waitForExit(timeout: 30) == 0, "\(server.logText)")
            #expect(server.logText.contains("\"message\":\"stopped\""))
        }
    }
}
