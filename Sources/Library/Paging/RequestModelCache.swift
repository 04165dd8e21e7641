import Essentials
import Foundation
import Synchronization

/// The server side of TTModel: each paged query is a model with an explicit state, and the
/// loaded ones are kept in memory.
///
/// - `loading`: a read is running; identical requests arriving meanwhile wait for it and share
///   its result (one read for N requests).
/// - `loaded`: the value is held with the library version it was read at and when; it is
///   served again without touching the store while that version is current and it is younger
///   than `maxAge`.
/// - `outdated`: the version moved on, `maxAge` passed, or `invalidate` was called; the next
///   request reloads it. `invalidate(erase: true)` also drops the values.
///
/// Bounded by entries and by cost (bytes); the least recently used entries go first.
/// The values are whatever the caller makes of a page (the server keeps encoded responses).
/// Ages are read from the injected `MonotonicClock` (`SystemClock` in the server, a
/// `ManualClock` in tests), so `maxAge` is tested without sleeping.
public final class RequestModelCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    public enum State: Sendable, Equatable {
        case loading
        case loaded(version: Int64)
        case outdated
    }

    public struct Limits: Sendable {
        public var maxEntries: Int
        public var maxCost: Int
        public var maxAge: Duration
        public init(maxEntries: Int = 1024, maxCost: Int = 64 << 20, maxAge: Duration = .seconds(60)) {
            self.maxEntries = maxEntries
            self.maxCost = maxCost
            self.maxAge = maxAge
        }
    }

    /// What a load produces: the value, the version it was read at, and its cost in bytes.
    public struct Loaded: Sendable {
        public var value: Value
        public var version: Int64
        public var cost: Int
        public init(value: Value, version: Int64, cost: Int) {
            self.value = value
            self.version = version
            self.cost = cost
        }
    }

    private typealias Flight = SingleFlight<Result<Loaded, any Error>>

    private enum Step {
        case hit(Value)
        case wait(Flight)
        case lead(Flight)
    }

    private struct Entry {
        var loaded: Loaded?
        /// The clock's nanoseconds when `loaded` was stored.
        var loadedAt: UInt64
        var invalidated = false
        var flight: Flight?
        var lastUse: UInt64
    }

    private struct Store {
        var entries: [Key: Entry] = [:]
        var cost = 0
        var useCounter: UInt64 = 0
        var loads = 0
        var hits = 0
        var misses = 0
    }

    public let limits: Limits
    private let clock: any MonotonicClock
    /// `limits.maxAge` in the clock's unit.
    private let maxAgeNanoseconds: UInt64
    private let store = Mutex(Store())

    public init(limits: Limits = Limits(), clock: any MonotonicClock) {
        self.limits = limits
        self.clock = clock
        maxAgeNanoseconds = limits.maxAge.nanoseconds
    }

    /// The value for `key` if it is loaded and current at `version`; never loads, never waits.
    public func current(_ key: Key, version: Int64) -> Value? {
        store.withLock { store in
            // One hash lookup; the use stamp is written in place.
            guard let index = store.entries.index(forKey: key) else { return nil }
            let entry = store.entries.values[index]
            guard let loaded = entry.loaded, isCurrent(entry, version: version) else { return nil }
            store.hits += 1
            store.useCounter += 1
            store.entries.values[index].lastUse = store.useCounter
            return loaded.value
        }
    }

    /// The value for `key` at `version`: from memory when current, otherwise loaded by `load`
    /// (or by the identical request already loading it). A failed load is not kept: the
    /// waiters get the error and the next request tries again.
    public func value(_ key: Key, version: Int64, load: () throws -> Loaded) throws -> Value {
        let step = store.withLock { store -> Step in
            store.useCounter += 1
            var entry = store.entries[key] ?? Entry(loaded: nil, loadedAt: 0, flight: nil, lastUse: 0)
            entry.lastUse = store.useCounter
            if let loaded = entry.loaded, isCurrent(entry, version: version) {
                store.entries[key] = entry
                store.hits += 1
                return .hit(loaded.value)
            }
            store.misses += 1
            if let flight = entry.flight {
                store.entries[key] = entry
                return .wait(flight)
            }
            let flight = Flight()
            entry.flight = flight
            store.entries[key] = entry
            store.loads += 1
            return .lead(flight)
        }
        switch step {
        case let .hit(value):
            return value
        case let .wait(flight):
            return try flight.wait().get().value
        case let .lead(flight):
            let result = Result { try load() }
            store.withLock { store in
                guard var entry = store.entries[key] else { return }
                entry.flight = nil
                if case let .success(loaded) = result {
                    store.cost -= entry.loaded?.cost ?? 0
                    entry.loaded = loaded
                    entry.loadedAt = clock.nanoseconds()
                    entry.invalidated = false
                    store.cost += loaded.cost
                }
                store.entries[key] = entry
                evict(&store)
            }
            flight.complete(result)
            return try result.get().value
        }
    }

    /// The model state of `key` at `version` (nil: never requested or evicted).
    public func state(_ key: Key, version: Int64) -> State? {
        store.withLock { store in
            guard let entry = store.entries[key] else { return nil }
            if entry.flight != nil { return .loading }
            guard let loaded = entry.loaded else { return nil }
            return isCurrent(entry, version: version) ? .loaded(version: loaded.version) : .outdated
        }
    }

    /// Makes every entry outdated; `erase` also drops the values (TTModel's `invalidate:`).
    public func invalidate(erase: Bool) {
        store.withLock { store in
            for key in Array(store.entries.keys) {
                if erase {
                    store.cost -= store.entries[key]?.loaded?.cost ?? 0
                    store.entries[key]?.loaded = nil
                    if store.entries[key]?.flight == nil { store.entries[key] = nil }
                } else {
                    store.entries[key]?.invalidated = true
                }
            }
        }
    }

    /// How many loads ran (not counting requests that joined one or hit memory).
    public var loadCount: Int { store.withLock { $0.loads } }

    /// Requests answered from memory (by `current` or `value`), and requests `value` could not
    /// answer from memory (they loaded, or joined a load). A `current` that finds nothing is
    /// not a miss: its caller goes on to `value`, which counts the outcome.
    public var statistics: (hits: Int, misses: Int) { store.withLock { ($0.hits, $0.misses) } }

    /// Entries held and their total cost.
    public var usage: (entries: Int, cost: Int) { store.withLock { ($0.entries.count, $0.cost) } }

    private func isCurrent(_ entry: Entry, version: Int64) -> Bool {
        guard let loaded = entry.loaded, !entry.invalidated, loaded.version == version else { return false }
        let now = clock.nanoseconds()
        return now < entry.loadedAt || now - entry.loadedAt < maxAgeNanoseconds
    }

    private func evict(_ store: inout Store) {
        while store.entries.count > limits.maxEntries || store.cost > limits.maxCost {
            // Least recently used among the idle entries (a loading one is never evicted).
            guard let victim = store.entries.filter({ $0.value.flight == nil }).min(by: { $0.value.lastUse < $1.value.lastUse })
            else { return }
            store.cost -= victim.value.loaded?.cost ?? 0
            store.entries[victim.key] = nil
        }
    }
}
