import Essentials
import Foundation

/// Polls `condition` until it holds or `timeout` has passed; true if it held. The one way a
/// test waits for something that happens on another thread or in another process without a
/// signal to block on: never a fixed sleep, and the deadline only bounds a failing test (a
/// passing one returns as soon as the condition holds).
@discardableResult
public func eventually(
    timeout: Duration = .seconds(10), pollingEvery interval: Duration = .milliseconds(2),
    _ condition: () throws -> Bool
) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        Thread.sleep(forTimeInterval: interval.seconds)
    }
}

/// `eventually` for async tests: suspends between looks instead of blocking a thread of the
/// cooperative pool (which the tasks under test need to make progress).
@discardableResult
public func eventually(
    timeout: Duration = .seconds(10), pollingEvery interval: Duration = .milliseconds(2),
    _ condition: () throws -> Bool
) async rethrows -> Bool {
    try await poll(timeout: timeout, interval: interval, condition)
}

/// `eventually` for a condition that itself awaits (an actor's state).
@discardableResult
public func eventually(
    timeout: Duration = .seconds(10), pollingEvery interval: Duration = .milliseconds(2),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    try await poll(timeout: timeout, interval: interval, condition)
}

/// The async polling loop of both async forms: suspends between looks, until the deadline.
private func poll(timeout: Duration, interval: Duration, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}
