import Crypto
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

/// An access store that counts the reads made through it.
final class CountingAccessStore: AccessStore {
    let base: SQLiteAlbumStore
    private let readCount = Atomic<Int>(0)
    var reads: Int { readCount.load(ordering: .relaxed) }
    init(_ base: SQLiteAlbumStore) { self.base = base }
    func accessKeys() throws -> [AccessKey] {
        readCount.add(1, ordering: .relaxed)
        return try base.accessKeys()
    }
    func saveAccessKey(_ key: AccessKey) throws { try base.saveAccessKey(key) }
    @discardableResult
    func deleteAccessKey(id: String) throws -> Bool { try base.deleteAccessKey(id: id) }
    func changeAccessKeys<T>(_ body: ([AccessKey]) throws -> (change: AccessKeyChange, result: T)) throws -> T {
        try base.changeAccessKeys(body)
    }
    func failedAttempts(client: String) throws -> FailedAttempts? {
        readCount.add(1, ordering: .relaxed)
        return try base.failedAttempts(client: client)
    }
    func allFailedAttempts() throws -> [String: FailedAttempts] { try base.allFailedAttempts() }
    @discardableResult
    func updateFailedAttempts(client: String, _ body: (FailedAttempts?) -> FailedAttempts?) throws -> FailedAttempts? {
        try base.updateFailedAttempts(client: client, body)
    }
    func pruneFailedAttempts(now: Date, interval: TimeInterval, keeping: Int) throws {
        try base.pruneFailedAttempts(now: now, interval: interval, keeping: keeping)
    }
}

/// A settings store whose write parks until released (a write stuck behind an import).
final class ParkedSettingsStore: SettingsStore {
    private let stored = Mutex<[UInt8]?>(nil)
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    func loadSettings() throws -> [UInt8]? { stored.withLock { $0 } }
    func saveSettings(_ json: [UInt8]) throws { stored.withLock { $0 = json } }
    func updateSettings(_ body: ([UInt8]?) throws -> [UInt8]?) throws {
        entered.signal()
        release.wait()
        if let next = try body(loadSettings()) { try saveSettings(next) }
    }
}

/// The decisions an event loop makes need no database and no lock held across a database
/// write.
@Suite(.serialized, .timeLimit(.minutes(1)), .ownThreads) struct AccessStateInMemoryTests {
    static let token = "correct-horse-battery-staple"

    @Test func quickDecisionsReadNoDatabase() throws {
        let store = try SQLiteAlbumStore(path: TestApp.temporaryDirectory() + "/bluelibrary.sqlite")
        try AccessGuard.storeToken(Self.token, in: store, iterations: 1000)
        let settings = try SettingsService(store: store)
        try settings.modify {
            $0.access.passcodeEnabled = true
            $0.access.attemptLimit = 2
        }
        let counting = CountingAccessStore(store)
        let guardian = try AccessGuard(store: counting, settings: settings, clock: { Date() })
        let right = "Bearer \(Self.token)"
        #expect(try guardian.check(authorization: right, client: "192.0.2.1").isAllowed)  // the slow first check
        for _ in 0..<2 {
            #expect(try guardian.check(authorization: "Bearer wrong-token-xyz", client: "192.0.2.2") == .unauthorized(invalidToken: true))
        }
        let reads = counting.reads
        // What an event loop decides: the cached token, no token, a locked address.
        #expect(guardian.isQuick(authorization: right, client: "192.0.2.1"))
        #expect(try guardian.check(authorization: right, client: "192.0.2.1").isAllowed)
        #expect(guardian.isQuick(authorization: nil, client: "192.0.2.3"))
        #expect(try guardian.check(authorization: nil, client: "192.0.2.3") == .unauthorized(invalidToken: false))
        #expect(guardian.isQuick(authorization: right, client: "192.0.2.2"))
        if case .locked = try guardian.check(authorization: right, client: "192.0.2.2") {} else { Issue.record("not locked") }
        #expect(counting.reads == reads, "no database read for a quick decision")
        // A token set elsewhere is learned by reloadToken (the watcher calls it).
        try AccessGuard.storeToken("another-token-0123", in: store, iterations: 1000)
        try guardian.reloadKeys()
        #expect(try guardian.check(authorization: "Bearer another-token-0123", client: "192.0.2.4").isAllowed)
        #expect(try guardian.check(authorization: "Bearer another-token-0123", client: "192.0.2.2").isAllowed, "a new token clears lockouts")
    }

    @Test func settingsStayReadableWhileAWriteWaitsOnTheDatabase() throws {
        let store = ParkedSettingsStore()
        let service = try SettingsService(store: store)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = try? service.update(patch: Array(#"{"paging": {"defaultLimit": 7}}"#.utf8))
            done.signal()
        }
        store.entered.wait()
        // The write is parked in the database: readers (every GET /albums) are not.
        #expect(service.paging.defaultLimit == 50)
        #expect(service.current.undo.depth == 100)
        store.release.signal()
        done.wait()
        #expect(service.paging.defaultLimit == 7)
    }
}
