#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import BlueLibraryTestSupport
import Foundation
import Library
import ServerRecords
import Storage
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Wrong-token floods. Failures are counted before hashing, the hashing runs on a small bounded
/// pool of its own with no lock serialising checks, and the failure records are pruned and
/// capped.
@Suite(.serialized, .timeLimit(.minutes(1)), .ownThreads) struct TokenFloodTests {
    static let token = "correct-horse-battery-staple"

    final class Clock: Sendable {
        private let value = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        var now: Date { value.withLock { $0 } }
        func advance(_ seconds: Double) { value.withLock { $0 = $0.addingTimeInterval(seconds) } }
    }

    static func makeGuard(limit: Int = 3, interval: Int = 60, maxRecords: Int = 10_000, threads: Int = 2, capacity: Int = 8,
                          clock: Clock = Clock(), beforeHash: @escaping @Sendable () -> Void = {}) throws -> (AccessGuard, SQLiteAlbumStore) {
        let store = try SQLiteAlbumStore(path: TestApp.temporaryDirectory() + "/bluelibrary.sqlite")
        try AccessGuard.storeToken(token, in: store, iterations: 1000)
        let settings = try SettingsService(store: store)
        try settings.modify {
            $0.access.passcodeEnabled = true
            $0.access.attemptLimit = limit
            $0.access.checkIntervalSeconds = interval
        }
        let guardian = try AccessGuard(store: store, settings: settings, clock: { clock.now }, maxFailureRecords: maxRecords,
                                       hashing: TokenHashing(threads: threads, capacity: capacity), beforeHash: beforeHash)
        return (guardian, store)
    }

    @Test func hashingRunsOnItsOwnPoolAndChecksFromTwoAddressesRunAtOnce() throws {
        let inside = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let hashThreads = Mutex<Set<UInt>>([])
        let callerThreads = Mutex<Set<UInt>>([])
        let (guardian, _) = try Self.makeGuard(beforeHash: {
            hashThreads.withLock { _ = $0.insert(UInt(pthread_self())) }
            inside.signal()
            proceed.wait()
        })
        let group = DispatchGroup()
        for client in ["192.0.2.1", "192.0.2.2"] {
            DispatchQueue.global().async(group: group) {
                callerThreads.withLock { _ = $0.insert(UInt(pthread_self())) }
                _ = try? guardian.check(authorization: "Bearer wrong-token-xyz", client: client)
            }
        }
        // Both checks are inside the hash together (a lock serialising checks would hold one back).
        let first = inside.wait(timeout: .now() + 20)
        let second = inside.wait(timeout: .now() + 20)
        proceed.signal()
        proceed.signal()
        group.wait()
        #expect(first == .success && second == .success, "the second check never reached the hash while the first was in it")
        // The hashes ran on the pool's threads, not on the threads that asked (request workers).
        #expect(hashThreads.withLock { $0 }.isDisjoint(with: callerThreads.withLock { $0 }))
        #expect(hashThreads.withLock { $0 }.count == 2)
    }

    @Test func aFullHashingPoolRefusesAtOnceWithoutHashingOrCounting() throws {
        let inside = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let (guardian, _) = try Self.makeGuard(threads: 1, capacity: 1, beforeHash: {
            inside.signal()
            proceed.wait()
        })
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = try? guardian.check(authorization: "Bearer wrong-token-xyz", client: "192.0.2.1")
            done.signal()
        }
        inside.wait()
        let hashes = guardian.slowHashes
        #expect(try guardian.check(authorization: "Bearer wrong-token-abc", client: "192.0.2.2") == .busy)
        #expect(guardian.slowHashes == hashes)
        proceed.signal()
        done.wait()
        // The refused attempt did not count: 192.0.2.2 still has all its attempts.
        for _ in 0..<2 {
            proceed.signal()  // lets the next hash through at once
            #expect(try guardian.check(authorization: "Bearer wrong-token-abc", client: "192.0.2.2") == .unauthorized(invalidToken: true))
        }
    }

    @Test func concurrentGuessesFromOneAddressAreCountedBeforeHashing() throws {
        let (guardian, _) = try Self.makeGuard(limit: 2)
        let decisions = Mutex<[AccessGuard.Decision]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let decision = (try? guardian.check(authorization: "Bearer wrong-token-\(index)-xyz", client: "198.51.100.7")) ?? .busy
            decisions.withLock { $0.append(decision) }
        }
        let all = decisions.withLock { $0 }
        #expect(all.filter { $0 == .unauthorized(invalidToken: true) }.count == 2, "\(all)")
        #expect(all.filter { if case .locked = $0 { true } else { false } }.count == 6, "\(all)")
        #expect(guardian.slowHashes == 2, "a locked address is answered without hashing")
        // Locked: even the right token gets 429 without a hash.
        if case .locked = try guardian.check(authorization: "Bearer \(Self.token)", client: "198.51.100.7") {} else { Issue.record("not locked") }
        #expect(guardian.slowHashes == 2)
    }

    @Test func failureRecordsExpireAndAreCappedOldestFirst() throws {
        let clock = Clock()
        let (guardian, store) = try Self.makeGuard(limit: 5, interval: 60, maxRecords: 3, clock: clock)
        for index in 0..<5 {
            clock.advance(1)
            _ = try guardian.check(authorization: "Bearer wrong-token-xyz", client: "192.0.2.\(index)")
        }
        try guardian.prune()
        let kept = Set(try store.allFailedAttempts().keys)
        #expect(kept.count <= 3, "\(kept)")
        #expect(kept.contains("192.0.2.4"), "the newest stays: \(kept)")
        #expect(!kept.contains("192.0.2.0"), "the oldest goes first: \(kept)")
        clock.advance(61)
        try guardian.prune()
        #expect(try store.allFailedAttempts().isEmpty, "expired after checkIntervalSeconds")
    }
}
