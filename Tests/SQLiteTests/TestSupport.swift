import Foundation
import HTTPTestSupport
import SQLite

/// Path of `name` inside a fresh temporary directory.
func withDatabasePath<T>(_ name: String = "test.sqlite", _ body: (String) throws -> T) throws -> T {
    try withTemporaryDirectory { directory in
        try body(directory.appendingPathComponent(name).path)
    }
}

/// Runs `body` on a new thread; `join()` waits for it and returns its result.
final class TestThread<T: Sendable>: @unchecked Sendable {
    // `result` is written once by the thread before `done.signal()` and read after `done.wait()`.
    private var result: Result<T, any Error>?
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () throws -> T) {
        Thread.detachNewThread { [self] in
            result = Result { try body() }
            done.signal()
        }
    }

    func join() throws -> T {
        done.wait()
        return try result!.get()
    }
}

struct TestFailure: Error, Equatable {
    let reason: String
}
