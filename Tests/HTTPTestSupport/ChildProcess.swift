import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a program to completion with `posix_spawn`, for tests that run many short commands
/// (a server that runs on is a `RunningChild`).
///
/// Not Foundation's `Process`: on Linux, `Process.run()` (swift-corelibs-foundation as shipped
/// with Swift 6.3.1) now and then crashes the *calling* process. It scans `/proc/self/fd` and
/// copies 256 bytes of each directory entry, reading past glibc's buffer when an entry ends
/// near an unmapped page (swiftlang/swift-corelibs-foundation#5472). A test process with many
/// open sockets that spawns dozens of commands hits it often enough to fail CI.
///
/// The child gets `input` on stdin and its own stdout/stderr pipes. Descriptors of this process
/// opened without close-on-exec are inherited (the Swift Glibc module does not offer
/// `posix_spawn_file_actions_addclosefrom_np`); the commands tests run are short-lived.
public enum ChildProcess {
    public struct Outcome: Sendable {
        /// The exit status, or 128 + the signal number if a signal ended the child.
        public var status: Int32
        public var stdout: [UInt8]
        /// Empty when stderr went to stdout (`mergeStderr`).
        public var stderr: [UInt8]
    }

    public struct SpawnFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs `path` with `arguments` (without argv[0]) and exactly `environment`, feeding it
    /// `input`, and waits for it, reading stdout and stderr to their ends meanwhile.
    public static func run(
        _ path: String, _ arguments: [String], environment: [String: String], input: [UInt8] = [], mergeStderr: Bool = false
    ) throws -> Outcome {
        // A child that exits without reading all of `input` must not kill this process.
        if !input.isEmpty { signal(SIGPIPE, SIG_IGN) }
        let stdin = try makePipe(), stdout = try makePipe(), stderr = try makePipe()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin.read, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout.write, 1)
        posix_spawn_file_actions_adddup2(&actions, mergeStderr ? stdout.write : stderr.write, 2)

        let spawned = spawn(path, arguments, environment: environment, actions: &actions)
        for fd in [stdin.read, stdout.write, stderr.write] { close(fd) }
        let pid: pid_t
        switch spawned {
        case let .success(child):
            pid = child
        case let .failure(error):
            for fd in [stdin.write, stdout.read, stderr.read] { close(fd) }
            throw SpawnFailure(description: error.description)
        }

        // stderr on its own thread, stdin written on another, stdout here: no pipe can fill up
        // and stall the child.
        let errorOutput = Collected()
        Thread { errorOutput.set(readToEnd(stderr.read)) }.start()
        Thread {
            writeAll(input, to: stdin.write)
            close(stdin.write)
        }.start()
        let output = readToEnd(stdout.read)
        var waitStatus: Int32 = 0
        while waitpid(pid, &waitStatus, 0) == -1 && errno == EINTR {}
        let exited = waitStatus & 0x7F == 0
        let status = exited ? (waitStatus >> 8) & 0xFF : 128 + (waitStatus & 0x7F)
        // The child is gone, so its stderr is at the end: the reader finishes at once.
        return Outcome(status: status, stdout: output, stderr: errorOutput.wait())
    }

    /// Bytes one thread reads and another waits for.
    private final class Collected: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private var bytes: [UInt8] = []

        func set(_ value: [UInt8]) {
            bytes = value
            done.signal()
        }

        func wait() -> [UInt8] {
            done.wait()
            return bytes
        }
    }

    /// This process's environment without the variables `dropping` says, plus `adding`.
    public static func environment(dropping: (String) -> Bool, adding: [String: String]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !dropping($0.key) }
        for (key, value) in adding { environment[key] = value }
        return environment
    }

    private static func makePipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            throw SpawnFailure(description: "pipe: \(String(cString: strerror(errno)))")
        }
        // Not inherited by children spawned meanwhile (the dup2 onto 0-2 clears it for ours).
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

    private static func readToEnd(_ fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes += buffer[0..<count]
            } else if count == 0 || errno != EINTR {
                break
            }
        }
        close(fd)
        return bytes
    }

    private static func writeAll(_ bytes: [UInt8], to fd: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return  // the child closed stdin: it does not want the rest
            }
        }
    }
}
