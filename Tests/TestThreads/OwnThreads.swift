import Foundation
import Testing

/// Runs every job of a test on a thread of its own instead of the Swift concurrency pool.
///
/// The cooperative pool has one thread per core: two on CI. Most of the suite is synchronous
/// end-to-end tests that block (a socket read, a child process, a semaphore), and Swift Testing
/// runs a synchronous test body on a pool thread. Two such bodies blocking at once stall every
/// other test, and the time limits of the tests queued behind them, for as long as they block:
/// on CI three cover tests were reported as over their one-minute limit that way while their
/// bodies had hardly run. With this executor as the task executor preference, a test's body,
/// its suite's `init` and `deinit`, and the child tasks it makes run on threads that are started
/// for them, so a blocked test holds only its own thread and Swift Testing's bookkeeping keeps
/// the pool.
///
/// A thread per job is deliberate: a synchronous test body is one job that runs to its end, and
/// the async tests here make at most a few thousand jobs, so pooling would save little and
/// would need its own accounting of idle threads.
public final class OwnThreadsExecutor: TaskExecutor, Sendable {
    public static let shared = OwnThreadsExecutor()

    /// Stack size of each thread: 8 MiB, what a pool or main thread has, so deep recursion in a
    /// test (a JSON nesting limit, a parser) behaves as it would there.
    static let stackSize = 8 << 20

    private static let marker = "OwnThreadsExecutor"

    /// Whether the caller runs on one of this executor's threads. (A thread-dictionary mark: a
    /// thread's name, set from inside it, sometimes read back as the pool's on Linux.)
    public static var isCurrentThreadOwn: Bool { Thread.current.threadDictionary[marker] != nil }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let thread = Thread { [self] in
            Thread.current.threadDictionary[Self.marker] = true
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
        thread.stackSize = Self.stackSize
        thread.start()
    }
}

/// The suite trait that puts a suite's tests (and the suites nested in it) on
/// ``OwnThreadsExecutor``: `@Suite(.ownThreads)`. Every suite in this package has it, and
/// `EveryTestSuiteRunsOnItsOwnThreads` fails when one does not.
public struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A child task's first job goes to its preferred executor, so the body starts on a
        // thread of its own by construction. (Setting only the preference with
        // `withTaskExecutorPreference` leaves the body where the caller is until the runtime
        // next hops.) The group waits for the child, so `function` does not outlive this call.
        try await withoutActuallyEscaping(function) { function in
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask(executorPreference: OwnThreadsExecutor.shared) { try await function() }
            }
        }
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// Runs the tests on threads of their own, never on the cooperative pool (see
    /// ``OwnThreadsExecutor``).
    public static var ownThreads: Self { OwnThreadsTrait() }
}
