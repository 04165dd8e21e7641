#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The real `bluelibrary` executable, started as a child process on a free port, for tests of
/// what only a process has: signals, exit codes, stdout logs, kill and restart.
public final class ServerProcess: @unchecked Sendable {
    // Set once in init.
    public let process: RunningChild
    public private(set) var port = 0
    private let output = OutputBuffer()

    /// What the child wrote to stdout and stderr so far.
    private final class OutputBuffer: @unchecked Sendable {
        private let lock = NSLock()
        private var bytes: [UInt8] = []
        func append(_ more: ArraySlice<UInt8>) { lock.lock(); bytes += more; lock.unlock() }
        var text: String { lock.lock(); defer { lock.unlock() }; return String(decoding: bytes, as: UTF8.self) }
    }

    /// The built executable beside the test bundle (`.build/<config>/bluelibrary`).
    public static var executableURL: URL {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return exe.deletingLastPathComponent().appendingPathComponent("bluelibrary")
    }

    /// Starts `bluelibrary serve` with `arguments` and waits for its "listening" log line
    /// (unless `waitUntilListening` is false: then call `waitUntilListening(timeout:)`, so
    /// several processes can start at once).
    /// `launcher` runs it through another program that ends in exec, so the process id stays
    /// the server's (e.g. `["/usr/bin/prlimit", "--nofile=64:64", "--"]`).
    public init(arguments: [String] = [], environment: [String: String] = [:], dataDirectory: String,
                timeout: Double = 20, launcher: [String] = [], waitUntilListening: Bool = true) throws {
        let serve = ["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dataDirectory] + arguments
        let (program, programArguments) = launcher.first.map { ($0, Array(launcher.dropFirst()) + [Self.executableURL.path] + serve) }
            ?? (Self.executableURL.path, serve)
        process = try RunningChild(
            program, programArguments,
            environment: ChildProcess.environment(dropping: { $0.hasPrefix("BLUELIBRARY_") }, adding: environment), captureOutput: true)
        // A thread of its own reads the pipe to its end (the child's exit), then closes it.
        // (FileHandle's readabilityHandler puts a dispatch source on the descriptor; one still
        // armed when the handle closed crashed libdispatch's event loop under load.)
        let output = self.output
        if let fd = process.output {
            Thread.detachNewThread {
                defer { close(fd) }
                var chunk = [UInt8](repeating: 0, count: 64 * 1024)
                while true {
                    let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    if count > 0 {
                        output.append(chunk[0..<count])
                    } else if count < 0 && errno == EINTR {
                        continue
                    } else {
                        return
                    }
                }
            }
        }
        if waitUntilListening { try self.waitUntilListening(timeout: timeout) }
    }

    /// Waits for the "listening" log line and takes the port from it; throws (and ends the
    /// process) when the process exits first or `timeout` seconds pass.
    public func waitUntilListening(timeout: Double = 20) throws {
        var announced: Int?
        eventually(timeout: .milliseconds(Int64(timeout * 1000)), pollingEvery: .milliseconds(20)) {
            if let line = logLines().first(where: { $0.contains("\"message\":\"listening\"") }),
                let range = line.range(of: #""port":(\d+)"#, options: .regularExpression)
            {
                announced = Int(line[range].filter(\.isNumber))
            }
            return announced != nil || !process.isRunning
        }
        if let announced {
            port = announced
            return
        }
        process.terminate()
        throw RawHTTPClient.ClientError(description: "server did not start: \(logText)")
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    public var logText: String { output.text }

    public func logLines() -> [String] { logText.split(separator: "\n").map(String.init) }

    public func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits for the process to exit; returns its status, or nil if it is still running.
    public func waitForExit(timeout: Double) -> Int32? {
        eventually(timeout: .milliseconds(Int64(timeout * 1000)), pollingEvery: .milliseconds(20)) { !process.isRunning }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// Runs the executable with `arguments` to completion; returns status and combined output.
    public static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
        let run = try ChildProcess.run(
            executableURL.path, arguments,
            environment: ChildProcess.environment(dropping: { $0.hasPrefix("BLUELIBRARY_") }, adding: environment),
            mergeStderr: true)
        return (run.status, String(decoding: run.stdout, as: UTF8.self))
    }
}
