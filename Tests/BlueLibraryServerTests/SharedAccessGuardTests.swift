import BlueLibraryTestSupport
import Foundation
import Library
import ServerRecords
import Storage
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Two instances' guards on one store (`shared`): failures add up in the store, and a lockout
/// made by one is in force at the other after its reload (which the stored-state watcher runs
/// when the database's access signal moves).
@Suite(.serialized, .timeLimit(.minutes(1)), .ownThreads) struct SharedAccessGuardTests {
    static let token = "correct-horse-battery-staple"

    @Test func failuresAtTwoInstancesLockTheAddressAtBoth() throws {
        let store = try SQLiteAlbumStore(path: TestApp.temporaryDirectory() + "/bluelibrary.sqlite")
        try AccessGuard.storeToken(Self.token, in: store, iterations: 1000)
        let settings = try SettingsService(store: store)
        try settings.modify {
            $0.access.passcodeEnabled = true
            $0.access.attemptLimit = 3
        }
        let a = try AccessGuard(store: store, settings: settings, clock: { Date() }, shared: true)
        let b = try AccessGuard(store: store, settings: settings, clock: { Date() }, shared: true)
        let wrong = "Bearer wrong-token-xyz"
        let client = "192.0.2.9"
        #expect(try a.check(authorization: wrong, client: client) == .unauthorized(invalidToken: true))
        #expect(try b.check(authorization: wrong, client: client) == .unauthorized(invalidToken: true))
        #expect(try store.failedAttempts(client: client)?.count == 2, "both failures are in the store")
        // The third, at A, reaches the limit although A saw only two of them.
        #expect(try a.check(authorization: wrong, client: client) == .unauthorized(invalidToken: true))
        #expect(try store.failedAttempts(client: client)?.lockedUntil != nil)
        if case .locked = try a.check(authorization: wrong, client: client) {} else { Issue.record("A does not lock") }

        // B learns of the lockout when it reloads; not before (its decisions are from memory).
        #expect(try b.check(authorization: "Bearer \(Self.token)", client: "192.0.2.10").isAllowed)
        try b.reloadFailures()
        if case .locked = try b.check(authorization: "Bearer \(Self.token)", client: client) {} else { Issue.record("B does not lock") }
    }

    /// A check still hashing has reserved its attempt in memory only; a concurrent shared check
    /// that reads the stored record (none yet) must not erase that reservation.
    @Test func aConcurrentCheckKeepsTheReservationsOfChecksStillHashing() throws {
        let store = try SQLiteAlbumStore(path: TestApp.temporaryDirectory() + "/bluelibrary.sqlite")
        try AccessGuard.storeToken(Self.token, in: store, iterations: 1000)
        let settings = try SettingsService(store: store)
        try settings.modify {
            $0.access.passcodeEnabled = true
            $0.access.attemptLimit = 2
        }
        let inside = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let holdFirst = Atomic<Bool>(true)
        let guardian = try AccessGuard(store: store, settings: settings, clock: { Date() }, hashing: TokenHashing(threads: 2, capacity: 4),
                                       beforeHash: {
                                           guard holdFirst.exchange(false, ordering: .relaxed) else { return }
                                           inside.signal()
                                           proceed.wait()
                                       }, shared: true)
        let wrong = "Bearer wrong-token-xyz"
        let client = "192.0.2.12"
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = try? guardian.check(authorization: wrong, client: client)
            done.signal()
        }
        #expect(inside.wait(timeout: .now() + 20) == .success)
        defer {
            proceed.signal()
            done.wait()
        }
        // The first attempt is reserved, not stored; the second reaches the limit of 2.
        #expect(try store.failedAttempts(client: client) == nil)
        #expect(try guardian.check(authorization: wrong, client: client) == .unauthorized(invalidToken: true))
        // A third is locked out without a hash: two attempts were made, whatever the store says yet.
        if case .locked = try guardian.check(authorization: wrong, client: client) {} else {
            Issue.record("the reservation of the check still hashing was erased: a third guess was hashed")
        }
    }

    @Test func oneProcessKeepsItsMemory() throws {
        let store = try SQLiteAlbumStore(path: TestApp.temporaryDirectory() + "/bluelibrary.sqlite")
        try AccessGuard.storeToken(Self.token, in: store, iterations: 1000)
        let settings = try SettingsService(store: store)
        try settings.modify { $0.access.passcodeEnabled = true }
        let guardian = try AccessGuard(store: store, settings: settings, clock: { Date() })
        _ = try store.updateFailedAttempts(client: "192.0.2.11") { _ in FailedAttempts(count: 99, windowStart: Date(), lockedUntil: .distantFuture) }
        try guardian.reloadFailures()  // not shared: memory is the truth, nothing is read
        #expect(try guardian.check(authorization: "Bearer \(Self.token)", client: "192.0.2.11").isAllowed)
    }

    @Test func aRestartWithTheSameTokenKeepsTheHashAndTheLockouts() throws {
        let directory = TestApp.temporaryDirectory()
        let token = SettingsAndAuthTests.token
        let first = try TestApp.make { $0.dataDirectory = directory; $0.token = AccessToken(token) }
        first.start()
        let salt = try #require(try first.backend.records.tokenHash()).salt
        #expect(try SettingsAndAuthTests.call(.port(first.port), "PATCH", "/settings", json: #"{"access": {"attemptLimit": 2}}"#,
                                              headers: SettingsAndAuthTests.bearer()).status == 200)
        for _ in 0..<2 {
            #expect(try SettingsAndAuthTests.call(.port(first.port), "DELETE", "/albums/at/0", headers: SettingsAndAuthTests.bearer("wrong-token-123")).status == 401)
        }
        first.shutdown()
        first.waitUntilStopped()

        // Another start with the same BLUELIBRARY_TOKEN (as every instance of a deployment has).
        let again = try TestApp.make { $0.dataDirectory = directory; $0.token = AccessToken(token) }
        again.start()
        defer { again.shutdown() }
        #expect(try again.backend.records.tokenHash()?.salt == salt, "the stored hash already verified the token: kept")
        #expect(try SettingsAndAuthTests.call(.port(again.port), "GET", "/settings", headers: SettingsAndAuthTests.bearer()).status == 429,
                "the lockout survives the restart")
    }
}
