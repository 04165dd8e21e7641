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
        /// The version the request that leads `flight` read: a request that read a newer one
        /// never joins it (its result may be older than what that request already saw).
        var flightVersion: Int64 = 0
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

    /// Whether a value was loaded for `key` and is still held, current or not (outdated by age,
    /// by version or by `invalidate()`; `invalidate(erase: true)` drops it). Counts no use.
    /// What a key proves by having been loaded once (the server: that a query string is valid
    /// under the limits in its key) stays true after the value is outdated.
    public func holdsValue(for key: Key) -> Bool {
        store.withLock { $0.entries[key]?.loaded != nil }
    }

    /// The value for `key` at `version`: from memory when current, otherwise loaded by `load`
    /// (or by the identical request already loading it, when that one read `version` or a
    /// newer one). A failed load is not kept: the waiters get the error and the next request
    /// tries again.
    ///
    /// Never older than `version`: a request whose version is newer than the one of the load
    /// in flight leads a load of its own (the older load's value is then not kept over it),
    /// and a joined load that still comes back older is not taken either (read-your-writes).
    ///
    /// A request that tracks its position (``ReadPosition/current``: the server reads from
    /// replicas) takes only a value loaded at exactly its `version`: a newer one was read by
    /// another request at a position this request's client was never given.
    public func value(_ key: Key, version: Int64, load: () throws -> Loaded) throws -> Value {
        let exact = ReadPosition.current != nil
        let step = step(key, version: version, exact: exact)
        switch step {
        case let .hit(value):
            return value
        case let .wait(flight):
            let loaded: Loaded
            do {
                loaded = try flight.wait().get()
            } catch let error as QueryInterrupted where error.reason == .cancelled {
                // Its leader's client went away, which says nothing about this request: ask
                // again (this one leads a load, or joins a newer one).
                return try value(key, version: version, load: load)
            }
            if loaded.version == version || (!exact && loaded.version > version) { return loaded.value }
            // Read older than its leader's version (a store whose versions went back): this
            // request reads for itself rather than answer older than what it saw.
            return try load().value
        case let .lead(flight):
            return try lead(key, version: version, flight: flight, load: load)
        }
    }

    /// Decides how a request for `key` at `version` is answered; registers a flight to lead.
    private func step(_ key: Key, version: Int64, exact: Bool) -> Step {
        store.withLock { store -> Step in
            store.useCounter += 1
            var entry = store.entries[key] ?? Entry(loaded: nil, loadedAt: 0, flight: nil, lastUse: 0)
            entry.lastUse = store.useCounter
            if let loaded = entry.loaded, isCurrent(entry, version: version) {
                store.entries[key] = entry
                store.hits += 1
                return .hit(loaded.value)
            }
            store.misses += 1
            if let flight = entry.flight, entry.flightVersion == version || (!exact && entry.flightVersion > version) {
                store.entries[key] = entry
                return .wait(flight)
            }
            // No load, or only one for an older version: lead (the newer flight replaces the
            // older one for joiners; the older one's leader still answers its own waiters).
            let flight = Flight()
            entry.flight = flight
            entry.flightVersion = version
            store.entries[key] = entry
            store.loads += 1
            return .lead(flight)
        }
    }

    /// Runs `load` for `key`, keeps its value unless a newer one is held, and completes `flight`.
    private func lead(_ key: Key, version: Int64, flight: Flight, load: () throws -> Loaded) throws -> Value {
        let result = Result { try load() }
        store.withLock { store in
            guard var entry = store.entries[key] else { return }
            // A load that a newer one overtook keeps its value only if not older than what
            // is held (it still answers its own waiters).
            let overtaken = entry.flight !== flight
            if !overtaken { entry.flight = nil }
            if case let .success(loaded) = result, !overtaken || loaded.version >= entry.loaded?.version ?? .min {
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
