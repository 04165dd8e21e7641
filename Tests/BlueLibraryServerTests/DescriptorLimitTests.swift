#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// The real server under a low open-file limit (set with prlimit on the child process only).
@Suite(.serialized, .timeLimit(.minutes(2)), .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit")), .ownThreads)
struct DescriptorLimitTests {
    static func launcher(soft: Int, hard: Int) -> [String] { ["/usr/bin/prlimit", "--nofile=\(soft):\(hard)", "--"] }

    /// The soft and hard "Max open files" of a process.
    static func openFileLimits(pid: Int32) throws -> (soft: Int, hard: Int) {
        let text = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let numbers = line.split(separator: " ").compactMap { Int($0) }
        try #require(numbers.count >= 2)
        return (numbers[0], numbers[1])
    }

    @Test func softLimitIsRaisedToTheHardLimitAndATooHighMaxConnectionsIsReported() throws {
        let server = try ServerProcess(dataDirectory: TestApp.temporaryDirectory(), launcher: Self.launcher(soft: 64, hard: 256))
        let limits = try Self.openFileLimits(pid: server.process.processIdentifier)
        #expect(limits.soft == 256)
        #expect(limits.hard == 256)
        // The default maxConnections (10,000) cannot be reached with 256 descriptors.
        let warning = server.logLines().first { $0.contains("maxConnections") }
        #expect(warning?.contains("\"level\":\"warning\"") == true, "\(server.logText)")
    }

    @Test func descriptorExhaustionPausesAcceptingAndRecovers() throws {
        let server = try ServerProcess(arguments: ["--event-loops", "1", "--access-log", "off"],
                                       dataDirectory: TestApp.temporaryDirectory(), launcher: Self.launcher(soft: 64, hard: 64))
        // Given more clients than descriptors (idle, the server holds about 26; the rest wait
        // in the listen backlog)
        var clients: [RawHTTPClient] = []
        for _ in 0..<60 { clients.append(try RawHTTPClient(port: server.port)) }
        let reported = eventually { server.logLines().contains { $0.contains("not accepting") } }
        #expect(reported, "accept failing for want of descriptors is logged: \(server.logText)")

        // When the first 40 leave
        clients.removeFirst(40)

        // Then every one still waiting is served,
        for client in clients {
            try client.send("GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
        // (That the failure is reported once per interval, not once per wake-up, is checked
        // in-process with a probe: HTTPServerTests' DescriptorExhaustionTests.)
    }
}
