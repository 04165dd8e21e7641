import Essentials
import Foundation
import HTTPTestSupport
import Synchronization
import AlbumStoreContract
import TestThreads
import Testing
@testable import Library

@Suite(.ownThreads) struct PagingTests {
    /// The commit gives the new version; no read after a commit.
    @Test func currentVersionAfterACommitNeedsNoRead() throws {
        let fixture = try Fixture(seeded: true)
        let before = try fixture.facade.currentVersion()
        let added = try fixture.facade.add(input("Low"))
        _ = try fixture.facade.move(id: added.album.id, to: 0)
        _ = try fixture.facade.setState(albumID: added.album.id)
        let reads = fixture.store.readCount
        #expect(try fixture.facade.currentVersion() == before + 2)
        #expect(fixture.store.readCount == reads, "the version came from the commits, not a read")
        #expect(try fixture.facade.version() == before + 2)
    }
}

@Suite(.ownThreads) struct RequestModelCacheTests {
    struct Boom: Error {}

    @Test func identicalConcurrentRequestsShareOneLoad() throws {
        let cache = RequestModelCache<String, Int>(clock: SystemClock())
        let gate = DispatchSemaphore(value: 0)
        let loads = Mutex(0)
        let results = Mutex<[Int]>([])
        let group = DispatchGroup()
        for _ in 0..<20 {
            DispatchQueue.global().async(group: group) {
                let value = try? cache.value("page", version: 1) {
                    loads.withLock { $0 += 1 }
                    gate.wait()  // hold the first load until everyone has queued behind it
                    return .init(value: 42, version: 1, cost: 1)
                }
                results.withLock { $0.append(value ?? -1) }
            }
        }
        // Given the load is running, the model is `loading`; release it once all 20 requests
        // have missed (the 19 others have joined it), polling with a deadline.
        #expect(eventually(timeout: .seconds(30)) {
            cache.state("page", version: 1) == .loading && cache.statistics.misses >= 20
        })
        gate.signal()
        group.wait()
        #expect(loads.withLock { $0 } == 1)
        #expect(cache.loadCount == 1)
        #expect(results.withLock { $0 } == Array(repeating: 42, count: 20))
        #expect(cache.state("page", version: 1) == .loaded(version: 1))
    }

    @Test("a request that read a newer version than the load in flight leads its own, never gets the older page")
    func aNewerRequestNeverJoinsAnOlderLoad() throws {
        let cache = RequestModelCache<String, String>(clock: SystemClock())
        let inLoad = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let older = Mutex<String?>(nil)
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            let value = try? cache.value("p", version: 5) {
                inLoad.signal()
                release.wait()  // the v5 read is slow; v6 commits meanwhile
                return .init(value: "v5", version: 5, cost: 1)
            }
            older.withLock { $0 = value }
        }
        inLoad.wait()
        let newer = Mutex<String?>(nil)
        let answered = DispatchSemaphore(value: 0)
        DispatchQueue.global().async(group: group) {
            let value = try? cache.value("p", version: 6) { .init(value: "v6", version: 6, cost: 1) }
            newer.withLock { $0 = value }
            answered.signal()
        }
        // The v6 request must never wait for the v5 load; one that joined that load would get
        // v5 once the load is let go (the wait only bounds a wrong join).
        _ = answered.wait(timeout: .now() + .seconds(5))
        release.signal()
        group.wait()
        #expect(newer.withLock { $0 } == "v6", "read-your-writes: never a page older than the request's version")
        #expect(older.withLock { $0 } == "v5", "the older request still gets its own load")
        #expect(cache.loadCount == 2)
        #expect(cache.current("p", version: 6) == "v6", "the overtaken older load does not replace the newer page")
        #expect(cache.state("p", version: 6) == .loaded(version: 6))
    }

    @Test("a request that joined a load whose client went away loads for itself, never gets the cancellation")
    func aJoinedLoadWhoseLeaderWasCancelledIsLoadedAgain() throws {
        let cache = RequestModelCache<String, Int>(clock: SystemClock())
        let release = DispatchSemaphore(value: 0)
        let leader = Mutex<Result<Int, any Error>?>(nil)
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            let outcome = Result {
                try cache.value("p", version: 1) {
                    release.wait()  // held until the second request has joined
                    throw QueryInterrupted(reason: .cancelled)
                }
            }
            leader.withLock { $0 = outcome }
        }
        #expect(eventually(timeout: .seconds(30)) { cache.state("p", version: 1) == .loading })
        let joined = Mutex<Result<Int, any Error>?>(nil)
        DispatchQueue.global().async(group: group) {
            let outcome = Result { try cache.value("p", version: 1) { .init(value: 7, version: 1, cost: 1) } }
            joined.withLock { $0 = outcome }
        }
        #expect(eventually(timeout: .seconds(30)) { cache.statistics.misses >= 2 }, "the second request joined the load")
        release.signal()
        group.wait()
        #expect(throws: QueryInterrupted.self) { try leader.withLock { $0 }?.get() }
        #expect(try joined.withLock { $0 }?.get() == 7)
        #expect(cache.state("p", version: 1) == .loaded(version: 1))
    }

    @Test func aNewVersionMakesPagesOutdatedAndTheNextRequestReloads() throws {
        let cache = RequestModelCache<String, String>(clock: SystemClock())
        _ = try cache.value("p", version: 1) { .init(value: "v1", version: 1, cost: 2) }
        #expect(cache.current("p", version: 1) == "v1")
        #expect(cache.current("p", version: 2) == nil)
        #expect(cache.state("p", version: 2) == .outdated)
        let reloaded = try cache.value("p", version: 2) { .init(value: "v2", version: 2, cost: 2) }
        #expect(reloaded == "v2")
        #expect(cache.loadCount == 2)
    }

    @Test func invalidateMarksOutdatedAndEraseDropsValues() throws {
        let cache = RequestModelCache<String, String>(clock: SystemClock())
        _ = try cache.value("p", version: 1) { .init(value: "v1", version: 1, cost: 10) }
        cache.invalidate(erase: false)
        #expect(cache.state("p", version: 1) == .outdated)
        #expect(cache.usage.cost == 10, "an outdated value is kept until reloaded")
        #expect(cache.holdsValue(for: "p"))
        cache.invalidate(erase: true)
        #expect(cache.state("p", version: 1) == nil)
        #expect(!cache.holdsValue(for: "p"))
        #expect(cache.usage.cost == 0)
    }

    @Test func failedLoadsAreNotKeptAndReachEveryWaiter() throws {
        let cache = RequestModelCache<String, Int>(clock: SystemClock())
        #expect(throws: Boom.self) { try cache.value("p", version: 1) { throw Boom() } }
        #expect(cache.state("p", version: 1) == nil)
        #expect(try cache.value("p", version: 1) { .init(value: 7, version: 1, cost: 1) } == 7)
    }

    @Test func boundedByEntriesAndCostLeastRecentlyUsedFirst() throws {
        let cache = RequestModelCache<Int, Int>(limits: .init(maxEntries: 3, maxCost: 100, maxAge: .seconds(60)), clock: SystemClock())
        for key in 0..<3 { _ = try cache.value(key, version: 1) { .init(value: key, version: 1, cost: 10) } }
        _ = cache.current(0, version: 1)  // 0 is now the most recently used
        _ = try cache.value(3, version: 1) { .init(value: 3, version: 1, cost: 10) }
        #expect(cache.current(1, version: 1) == nil, "the least recently used went")
        #expect(cache.current(0, version: 1) == 0)
        _ = try cache.value(4, version: 1) { .init(value: 4, version: 1, cost: 95) }
        #expect(cache.usage.cost <= 100)
        #expect(cache.current(4, version: 1) == 4)
    }

    @Test func pagesOlderThanMaxAgeAreOutdated() throws {
        let clock = Essentials.ManualClock()
        let cache = RequestModelCache<String, Int>(limits: .init(maxEntries: 10, maxCost: 100, maxAge: .milliseconds(30)), clock: clock)
        _ = try cache.value("p", version: 1) { .init(value: 1, version: 1, cost: 1) }
        #expect(cache.current("p", version: 1) == 1)
        clock.advance(by: .milliseconds(29))
        #expect(cache.current("p", version: 1) == 1, "still younger than maxAge")
        clock.advance(by: .milliseconds(1))
        #expect(cache.current("p", version: 1) == nil)
        #expect(cache.state("p", version: 1) == .outdated)
        #expect(cache.holdsValue(for: "p"), "outdated by age, still held")
        #expect(!cache.holdsValue(for: "q"))
    }
}
