import Essentials
import Foundation
import Library
import Postgres
import ServerRecords
import Storage
import TestThreads
import Testing

/// PostgresServerRecords across instances (two pools on one database). The contract's
/// idempotency, settings and access checks run on them through PostgresStoreTests' `.postgres`
/// factory, with the rest of the contract.
@Suite("PostgreSQL server records", .ownThreads)
struct PostgresServerRecordsTests {
    @Test("two instances racing writes with one key: exactly one write claims it, the others roll back")
    func racingClaims() throws {
        let database = try TestDatabase()
        let stores = [try PostgresAlbumStore(pool: database.pool()), try PostgresAlbumStore(pool: database.pool())]
        let records = PostgresServerRecords(pool: database.pool())
        let now = Date()
        for round in 0..<20 {
            let key = "race-\(round)"
            let outcomes = concurrently(4) { thread in
                try Self.write(stores[thread % 2], claiming: key, "f", now: now)
            }
            #expect(outcomes.filter { (try? $0.get()) == true }.count == 1, "round \(round): \(outcomes)")
            #expect(outcomes.filter { (try? $0.get()) == false }.count == 3, "round \(round): \(outcomes)")
        }
        // The answer stored through one instance is replayed by the other.
        let response = IdempotentResponse(status: 201, headers: [["Location", "/albums/X"]], body: Array("{}".utf8))
        try records.complete(key: "race-0", response: response)
        #expect(try PostgresServerRecords(pool: database.pool()).lookup(key: "race-0", fingerprint: "f", now: now, expiry: 60) == .replay(response))
        #expect(try records.lookup(key: "race-0", fingerprint: "g", now: now, expiry: 60) == .mismatch)
    }

    @Test("an expired key is claimed again by one write only")
    func expiredKeyRace() throws {
        let database = try TestDatabase()
        let stores = [try PostgresAlbumStore(pool: database.pool()), try PostgresAlbumStore(pool: database.pool())]
        let records = PostgresServerRecords(pool: database.pool())
        let start = Timestamp.date(milliseconds: 1_700_000_000_000)
        #expect(try Self.write(stores[0], claiming: "old", "f", now: start))
        try records.complete(key: "old", response: IdempotentResponse(status: 200, headers: [], body: []))
        let later = start.addingTimeInterval(120)
        let outcomes = concurrently(4) { thread in
            try Self.write(stores[thread % 2], claiming: "old", "new", now: later)
        }
        #expect(outcomes.filter { (try? $0.get()) == true }.count == 1, "\(outcomes)")
        #expect(try records.lookup(key: "old", fingerprint: "new", now: later, expiry: 60) == .inProgress)
    }

    /// A write (changing nothing) of `store` claiming `key`: true when it committed, false
    /// when the key was taken and it rolled back.
    static func write(_ store: PostgresAlbumStore, claiming key: String, _ fingerprint: String, now: Date) throws -> Bool {
        let claim = IdempotencyKeyClaim(key: key, fingerprint: fingerprint, now: now, expiry: 60)
        do {
            try IdempotencyKeyClaim.$current.withValue(claim) { try store.write(.default) { _ throws in } }
            return claim.isCommitted
        } catch is IdempotencyKeyTaken {
            return false
        }
    }

    @Test("failed attempts counted through two instances at once: none is lost")
    func failedAttemptsAcrossInstances() throws {
        let database = try TestDatabase()
        let instances = [try PostgresServerRecords.migrating(pool: database.pool()), PostgresServerRecords(pool: database.pool())]
        let start = Timestamp.date(milliseconds: 1_700_000_000_000)
        let rounds = 25
        let results = concurrently(4) { thread in
            for _ in 0..<rounds {
                try instances[thread % 2].updateFailedAttempts(client: "10.0.0.9") { old in
                    FailedAttempts(count: (old?.count ?? 0) + 1, windowStart: old?.windowStart ?? start)
                }
            }
        }
        for result in results { try result.get() }
        #expect(try instances[1].failedAttempts(client: "10.0.0.9") == FailedAttempts(count: 4 * rounds, windowStart: start))
    }

    @Test("settings updated through two instances at once: no update is lost")
    func settingsAcrossInstances() throws {
        let database = try TestDatabase()
        let instances = [try PostgresServerRecords.migrating(pool: database.pool()), PostgresServerRecords(pool: database.pool())]
        let rounds = 25
        let results = concurrently(4) { thread in
            for _ in 0..<rounds {
                try instances[thread % 2].updateSettings { stored in
                    let count = stored.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
                    return Array(String(count + 1).utf8)
                }
            }
        }
        for result in results { try result.get() }
        #expect(try instances[1].loadSettings() == Array(String(4 * rounds).utf8))
    }

    @Test("every change to settings, the token or failed attempts moves the signal generation")
    func signals() throws {
        let database = try TestDatabase()
        let writer = try PostgresServerRecords.migrating(pool: database.pool())
        let watcher = PostgresServerRecords(pool: database.pool())
        var last = try watcher.signalGeneration()
        func moved(_ what: Comment) throws {
            let now = try watcher.signalGeneration()
            #expect(now > last, what)
            last = now
        }
        func stayed(_ what: Comment) throws {
            #expect(try watcher.signalGeneration() == last, what)
        }
        try writer.saveSettings(Array(#"{"a":1}"#.utf8))
        try moved("saveSettings")
        try writer.updateSettings { _ in nil }
        try stayed("an update that stores nothing")
        try writer.updateSettings { _ in Array(#"{"a":2}"#.utf8) }
        try moved("updateSettings")
        #expect(try watcher.loadSettings() == Array(#"{"a":2}"#.utf8), "the other instance reads the change")
        let settingsGeneration = try watcher.signalGenerations()[PostgresSchema.Signal.settings]

        try writer.setTokenHash(TokenHash(salt: [1], hash: [2], iterations: 10))
        try moved("setTokenHash")
        let start = Timestamp.date(milliseconds: 1_700_000_000_000)
        try writer.updateFailedAttempts(client: "a") { _ in FailedAttempts(count: 1, windowStart: start) }
        try moved("a failed attempt")
        try writer.updateFailedAttempts(client: "a") { $0 }
        try stayed("an update that changes nothing")
        try writer.pruneFailedAttempts(now: start, interval: 60, keeping: 10)
        try stayed("a prune that deletes nothing")
        try writer.pruneFailedAttempts(now: start.addingTimeInterval(120), interval: 60, keeping: 10)
        try moved("a prune that deletes")
        try writer.setTokenHash(nil)
        try moved("removing the token")
        #expect(try watcher.signalGenerations()[PostgresSchema.Signal.settings] == settingsGeneration, "access changes move only their signal")
    }

    @Test("a secret stored by racing instances is the same for all of them")
    func secrets() throws {
        let database = try TestDatabase()
        let instances = [try PostgresServerRecords.migrating(pool: database.pool()), PostgresServerRecords(pool: database.pool())]
        let values = try concurrently(4) { thread in
            try instances[thread % 2].secret(named: "cursor", orStore: [UInt8](repeating: UInt8(thread), count: 32))
        }.map { try $0.get() }
        #expect(Set(values).count == 1)
        #expect(try instances[0].secret(named: "cursor", orStore: [9]) == values[0])
    }

    @Test("an unreachable database surfaces as an unavailable PostgresError")
    func unreachable() throws {
        let pool = PostgresPool(PostgresPool.Configuration(url: "postgresql://nobody@127.0.0.1:1/none", size: 1))
        let records = PostgresServerRecords(pool: pool)
        #expect {
            _ = try records.lookup(key: "k", fingerprint: "f", now: Date(), expiry: 60)
        } throws: { error in
            (error as? PostgresError)?.isUnavailable == true
        }
        #expect(throws: PostgresError.self) { try records.signalGeneration() }
    }
}
