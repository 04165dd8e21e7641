import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A program started with `posix_spawn` that runs on until it is stopped: the servers tests
/// start (`ServerProcess`, nginx). Not Foundation's `Process` (see `ChildProcess` for how its
/// `run()` can crash the test process). Every descriptor of this process but the child's
/// stdin, stdout and stderr is closed in the child (`posix_spawn_file_actions_addclosefrom_np`,
/// glibc 2.34 and later), so a long-lived child holds none of the tests' sockets: a client
/// that a test closes is closed for the server too.
public final class RunningChild: Sendable {
    public let processIdentifier: Int32
    /// The read end of the child's stdout and stderr together (nil: they went to /dev/null).
    /// The reader owns it and closes it.
    public let output: Int32?
    /// The wait status once the child has been reaped.
    private let reaped = Mutex<Int32?>(nil)

    public struct SpawnFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts `path` with `arguments` (without argv[0]) and exactly `environment`; stdin is
    /// /dev/null, stdout and stderr a pipe (`captureOutput`) or /dev/null.
    public init(_ path: String, _ arguments: [String], environment: [String: String], captureOutput: Bool) throws {
        guard let closeFrom = Self.addCloseFrom else {
            throw SpawnFailure(description: "posix_spawn_file_actions_addclosefrom_np is missing (glibc 2.34 or later is needed)")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeEnds: [Int32] = [-1, -1]
        if captureOutput {
            guard pipe(&pipeEnds) == 0 else { throw SpawnFailure(description: "pipe: \(String(cString: strerror(errno)))") }
            for fd in pipeEnds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        _ = closeFrom(&actions, 3)
        let spawned = spawn(path, arguments, environment: environment, actions: &actions)
        if captureOutput { close(pipeEnds[1]) }
        let pid: pid_t
        switch spawned {
        case let .success(child):
            pid = child
        case let .failure(error):
            if captureOutput { close(pipeEnds[0]) }
            throw SpawnFailure(description: error.description)
        }
        processIdentifier = pid
        output = captureOutput ? pipeEnds[0] : nil
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32

    /// glibc's `posix_spawn_file_actions_addclosefrom_np`, which the Glibc module does not declare.
    private static let addCloseFrom: AddCloseFrom? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()

    /// Reads the child's output until `done` says so of all that was read, or the output ends;
    /// returns that text. For a caller that reads the output itself (it closes `output` after).
    public func readOutput(until done: (String) -> Bool) -> String {
        guard let output else { return "" }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !done(String(decoding: bytes, as: UTF8.self)) {
            let count = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes += chunk[0..<count]
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                break
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A child whose handle goes is never left behind as a zombie: killed when it still runs,
    /// and reaped. (A zombie child makes Swift Testing's exit-test monitor spin for good: it
    /// waits for any child without reaping, and finds that one every time.)
    deinit {
        if reap(blocking: false) == nil {
            kill(processIdentifier, SIGKILL)
            waitUntilExit()
        }
    }

    public var isRunning: Bool { reap(blocking: false) == nil }

    /// Waits for the child to exit (and reaps it).
    public func waitUntilExit() { _ = reap(blocking: true) }

    /// Sends SIGTERM.
    public func terminate() { kill(processIdentifier, SIGTERM) }

    /// The exit code, or the number of the signal that ended the child (as Foundation's
    /// `Process` says it); 0 while it runs.
    public var terminationStatus: Int32 {
        guard let status = reap(blocking: false) else { return 0 }
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : status & 0x7F
    }

    public var terminationReason: Process.TerminationReason {
        guard let status = reap(blocking: false) else { return .exit }
        return status & 0x7F == 0 ? .exit : .uncaughtSignal
    }

    /// The wait status, reaping the child once; nil while it runs (`blocking`: waits for it).
    private func reap(blocking: Bool) -> Int32? {
        reaped.withLock { reaped in
            if let reaped { return reaped }
            var status: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(processIdentifier, &status, blocking ? 0 : WNOHANG) } while result == -1 && errno == EINTR
            guard result == processIdentifier else { return nil }
            reaped = status
            return status
        }
    }
}
