#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import HTTPTestSupport
import Library
import Synchronization
import TestThreads
import Testing

@testable import Covers

/// Several instances with one cover cache directory (two services here: `flock` locks belong to
/// open files, so two services in one process exclude each other as two processes do).
@Suite(.serialized, .timeLimit(.minutes(1)), .ownThreads)
final class SharedCacheDirectoryTests {
    let upstream: TestUpstream
    let directory: TemporaryDirectory
    let clock = CoverTestClock()

    init() throws {
        upstream = try TestUpstream()
        directory = try TemporaryDirectory()
    }

    deinit {
        upstream.stop()
        directory.remove()
    }

    func service() throws -> CoverService {
        try CoverService(configuration: testConfiguration(directory: directory.path), now: clock.function, clock: clock)
    }

    @Test func concurrentMissesInTwoInstancesCauseOneUpstreamFetch() throws {
        let first = try service()
        let second = try service()
        let url = upstream.url("/coalesce.png")  // the upstream takes 400 ms: the misses overlap
        let start = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        let results = Mutex<[CachedCover]>([])
        for index in 0..<20 {
            let covers = index % 2 == 0 ? first : second
            done.enter()
            Thread {
                start.wait()
                if let cover = try? covers.cover(for: url, wait: .seconds(20)).cover { results.withLock { $0.append(cover) } }
                done.leave()
            }.start()
        }
        for _ in 0..<20 { start.signal() }
        #expect(done.wait(timeout: .now() + 30) == .success)

        let covers = results.withLock { $0 }
        #expect(covers.count == 20)
        #expect(Set(covers.map(\.etag)).count == 1)
        #expect(upstream.hits("/coalesce.png") == 1, "one fetch for both instances")
        #expect(first.statistics.adopted + second.statistics.adopted == 1, "the other found the copy on disk")
        #expect(Set(covers.compactMap(\.filePath)).count == 1, "both serve the one stored file")
        #expect(directory.files().filter { CoverCacheRecord.isCacheFileName($0) }.count == 1)
    }

    @Test func aCopyStoredByAnotherInstanceIsUsedWhenItsLockIsFree() throws {
        let first = try service()
        let second = try service()  // opened before the copy exists: its index is empty
        let url = upstream.url("/cover.png")
        let stored = try #require(try first.cover(for: url, wait: .seconds(5)).cover)
        let found = try #require(try second.cover(for: url, wait: .seconds(5)).cover)
        #expect(found.etag == stored.etag && found.filePath == stored.filePath)
        #expect(upstream.hits("/cover.png") == 1)
        #expect(second.statistics.adopted == 1)
    }

    @Test func aStaleCopyIsFetchedAgainNotAdopted() throws {
        let first = try service()
        let url = upstream.url("/cover.png")
        _ = try first.cover(for: url, wait: .seconds(5))
        clock.advance(by: 7200)  // past the hour of freshness
        let second = try service()  // finds the stale copy at open
        _ = try second.cover(for: url, wait: .seconds(5))  // served stale, revalidated in the background
        #expect(eventually { self.upstream.hits("/cover.png") == 2 })
        #expect(second.statistics.adopted == 0)
    }

    @Test func anInstanceStartingOnTheDirectoryLeavesAnotherInstancesWritesAlone() throws {
        // Another instance in the middle of a store: a temporary file it writes, and an image
        // renamed into place whose record is not written yet (it holds the cover's fetch lock).
        let temporary = directory.file(".tmp-inflight1")
        let image = directory.file(String(repeating: "a", count: 64) + "-" + String(repeating: "b", count: 16) + ".png")
        let stripe = CoverFetchLocks.stripe(ofURLHash: String(repeating: "a", count: 64))
        #expect(mkdir(directory.file(CoverFetchLocks.directoryName), 0o755) == 0)
        let lockFile = directory.file(CoverFetchLocks.directoryName + "/\(stripe).lock")
        for path in [temporary, image, lockFile] { #expect(FileManager.default.createFile(atPath: path, contents: Data(Fixtures.png))) }
        // Close-on-exec: a child process another test starts meanwhile would otherwise inherit
        // the descriptors, and hold the locks after they are closed here.
        let writing = open(temporary, O_RDWR | O_CLOEXEC), fetching = open(lockFile, O_RDWR | O_CLOEXEC)
        #expect(flock(writing, LOCK_EX) == 0 && flock(fetching, LOCK_EX) == 0)
        _ = try service()
        #expect(FileManager.default.fileExists(atPath: temporary) && FileManager.default.fileExists(atPath: image), "in use: kept")

        // The other instance died mid-write: its locks went with it; leftovers go at the next start.
        close(writing)
        close(fetching)
        _ = try service()
        #expect(!FileManager.default.fileExists(atPath: temporary) && !FileManager.default.fileExists(atPath: image))
    }

    @Test func anImageAnotherInstanceEvictedIsFetchedAgainNotServedMissing() throws {
        let first = try service()
        let second = try service()
        let url = upstream.url("/cover.png")
        _ = try #require(try first.cover(for: url, wait: .seconds(5)).cover)
        let adopted = try #require(try second.cover(for: url, wait: .seconds(5)).cover)
        let path = try #require(adopted.filePath)
        first.evict(url: url)  // removes the record and the image both indexes point at
        #expect(!FileManager.default.fileExists(atPath: path))

        #expect(second.state(for: url) == nil, "the missing image is not reported loaded (the fast path)")
        let again = try #require(try second.cover(for: url, wait: .seconds(5)).cover)
        let againPath = try #require(again.filePath)
        #expect(FileManager.default.fileExists(atPath: againPath), "fetched and stored again, not the vanished file")
        #expect(again.bytes == Fixtures.png)
        #expect(upstream.hits("/cover.png") == 2)
        let served = try #require(try second.cover(for: url, wait: .seconds(5)).cover)
        #expect(served.filePath == againPath)
    }

    @Test func anImageAnotherInstanceReplacedIsAdoptedNotServedMissing() throws {
        let first = try service()
        let second = try service()
        let url = upstream.url("/etag.png")
        _ = try #require(try first.cover(for: url, wait: .seconds(5)).cover)
        let old = try #require(try second.cover(for: url, wait: .seconds(5)).cover)
        // The first instance replaces the cover (a new version under a new file name; the old file goes).
        upstream.current.withLock { $0 = (Fixtures.pngV2, "\"v2\"") }
        first.evict(url: url)
        let replaced = try #require(try first.cover(for: url, wait: .seconds(5)).cover)
        #expect(replaced.filePath != old.filePath)
        #expect(!FileManager.default.fileExists(atPath: try #require(old.filePath)))

        let adoptedBefore = second.statistics.adopted
        let served = try #require(try second.cover(for: url, wait: .seconds(5)).cover)
        #expect(served.filePath == replaced.filePath && served.bytes == Fixtures.pngV2)
        #expect(second.statistics.adopted == adoptedBefore + 1, "the other instance's copy, not a fetch")
        #expect(upstream.hits("/etag.png 200") == 2)
    }

    @Test func failingFetchesOfManyURLsLeaveAtMostOneLockFilePerStripe() throws {
        let covers = try service()
        for index in 0..<200 {
            let url = upstream.url("/missing.png?n=\(index)")
            #expect(coverError { () throws(CoverError) -> CoverResult in try covers.cover(for: url, wait: .seconds(5)) } != nil)
        }
        #expect(directory.files().filter { $0.hasSuffix(".lock") }.isEmpty, "no lock file per URL")
        let locks = (try? FileManager.default.contentsOfDirectory(atPath: directory.file(CoverFetchLocks.directoryName))) ?? []
        #expect(!locks.isEmpty && locks.count <= CoverFetchLocks.stripeCount)
        #expect(locks.allSatisfy { $0.hasSuffix(".lock") })
        // A restart's scan leaves the lock directory alone.
        _ = try service()
        #expect(directory.files().contains(CoverFetchLocks.directoryName))
    }

    @Test func aStripeHeldElsewhereIsWaitedForOnlyUpToTheFetchTimeout() throws {
        let covers = try CoverService(
            configuration: testConfiguration(directory: directory.path, totalTimeout: .milliseconds(500)),
            now: clock.function, clock: clock)
        let url = upstream.url("/cover.png")
        let key = try CoverURL(url).description
        // Another process holds the cover's stripe and never lets go.
        let stripe = CoverFetchLocks.stripe(ofURLHash: CoverDiskCache.urlHash(key))
        let holder = open(directory.file(CoverFetchLocks.directoryName + "/\(stripe).lock"), O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        defer { close(holder) }
        #expect(holder >= 0 && flock(holder, LOCK_EX) == 0)
        let cover = try #require(try covers.cover(for: url, wait: .seconds(20)).cover, "fetched unlocked after the wait")
        #expect(cover.bytes == Fixtures.png)
        #expect(upstream.hits("/cover.png") == 1)
    }
}
