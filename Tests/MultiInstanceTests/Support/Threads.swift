import Foundation
import Synchronization

/// A value several threads read and change, behind a lock.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<T: Sendable>(_ body: (inout Value) throws -> T) rethrows -> T { try mutex.withLock { try body(&$0) } }

    var value: Value { mutex.withLock { $0 } }
}

/// Runs `body(0)` ... `body(count - 1)` each on a thread of its own, all at once (not
/// `concurrentPerform`, which runs no more at a time than there are cores), and returns their
/// results in order once every one has returned.
func onThreads<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) throws -> T) -> [Result<T, any Error>] {
    let results = Locked<[Int: Result<T, any Error>]>([:])
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread.detachNewThread {
            let result = Result { try body(index) }
            results.withLock { $0[index] = result }
            group.leave()
        }
    }
    group.wait()
    let all = results.value
    return (0..<count).map { all[$0]! }
}
