import Dispatch
import Foundation
import HTTPTestSupport
import Library
import TestThreads
import Testing

@testable import Covers

/// The disk cache and revalidation around a real upstream on 127.0.0.1.
@Suite(.serialized, .timeLimit(.minutes(1)), .ownThreads)
final class CoverCacheTests {
    /// The cache's files, without the fetch locks' directory (see `CoverFetchLocks`).
    var cacheFiles: [String] { directory.files().filter { $0 != CoverFetchLocks.directoryName } }

    let upstream: TestUpstream
    let directory: TemporaryDirectory
    let clock = CoverTestClock()
    let events = RecordingSink()

    init() throws {
        upstream = try TestUpstream()
        directory = try TemporaryDirectory()
    }

    deinit {
        upstream.stop()
        directory.remove()
    }

    func service(cacheSizeLimit: Int = 512 * 1024 * 1024) throws -> CoverService {
        try CoverService(
            configuration: testConfiguration(directory: directory.path, cacheSizeLimit: cacheSizeLimit),
            events: events, now: clock.function, clock: clock)
    }

    /// Waits (bounded) for background fetches such as revalidations to finish.
    func waitUntilIdle(_ covers: CoverService) -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while !covers.isIdle {
            guard ContinuousClock.now < deadline else { return false }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return true
    }

    @Test func aRestartKeepsTheCacheAndCleansLeftovers() throws {
        let url = upstream.url("/cover.png")
        let first = try #require(try service().cover(for: url, wait: .seconds(5)).cover)
        // Leftovers of a crash: a half-written temporary file and an image without a record.
        let stray = directory.path + "/.tmp-0123"
        let orphan = directory.path + "/" + String(repeating: "a", count: 64) + "-" + String(repeating: "b", count: 16) + ".png"
        _ = FileManager.default.createFile(atPath: stray, contents: Data([1, 2, 3]))
        _ = FileManager.default.createFile(atPath: orphan, contents: Data(Fixtures.png))
        upstream.stop()

        let restarted = try service()
        let again = try #require(try restarted.cover(for: url, wait: .seconds(1)).cover)
        #expect(again == first)
        #expect(again.bytes == Fixtures.png)
        #expect(upstream.hits("/cover.png") == 1)
        #expect(!FileManager.default.fileExists(atPath: stray))
        #expect(!FileManager.default.fileExists(atPath: orphan))
        #expect(cacheFiles.count == 2)
    }

    @Test func aRecordWhoseImageIsDamagedIsDroppedAtStart() throws {
        let url = upstream.url("/cover.png")
        let first = try #require(try service().cover(for: url, wait: .seconds(5)).cover)
        try Data(Fixtures.png.prefix(100)).write(to: URL(fileURLWithPath: first.filePath!))

        let restarted = try service()
        #expect(restarted.state(for: url) == nil)
        #expect(try restarted.cover(for: url, wait: .seconds(5)).cover?.bytes == Fixtures.png)
        #expect(upstream.hits("/cover.png") == 2)
    }

    @Test func staleCopyIsServedWhenTheUpstreamIsDown() throws {
        let covers = try service()
        let url = upstream.url("/cover.png")
        let first = try #require(try covers.cover(for: url, wait: .seconds(5)).cover)
        upstream.stop()
        clock.advance(by: 3601)  // past the freshness of one hour

        let stale = try #require(try covers.cover(for: url, wait: .seconds(5)).cover)
        #expect(stale == first)
        #expect(stale.freshUntil < clock.now)
        #expect(waitUntilIdle(covers))
        // The failed revalidation changed nothing: still served, nothing published.
        #expect(try covers.cover(for: url, wait: .seconds(5)).cover == first)
        #expect(covers.state(for: url) == .loaded(first))
        #expect(events.all.count == 1)
    }

    @Test func revalidationUses304AndPicksUpNewVersions() throws {
        let covers = try service()
        let url = upstream.url("/etag.png")
        let first = try #require(try covers.cover(for: url, wait: .seconds(5)).cover)
        #expect(events.waitForEvent())
        #expect(upstream.hits("/etag.png 200") == 1)

        // Still fresh: no request at all.
        clock.advance(by: 1800)
        #expect(try covers.cover(for: url, wait: .zero).cover == first)
        #expect(waitUntilIdle(covers))
        #expect(upstream.hits("/etag.png 304") == 0)

        // Stale: served at once, revalidated in the background with If-None-Match.
        clock.advance(by: 1801)
        #expect(try covers.cover(for: url, wait: .zero).cover == first)
        #expect(events.waitForEvent())
        #expect(upstream.hits("/etag.png 304") == 1)
        #expect(upstream.hits("/etag.png 200") == 1)
        let refreshed = try #require(covers.state(for: url).flatMap { state -> CachedCover? in
            if case .loaded(let cover) = state { return cover }
            return nil
        })
        #expect(refreshed.etag == first.etag)
        #expect(refreshed.validatedAt == clock.now)
        #expect(refreshed.filePath == first.filePath)

        // A new version upstream replaces the copy (and its file) at the next revalidation.
        upstream.current.withLock { $0 = (Fixtures.pngV2, "\"v2\"") }
        clock.advance(by: 3601)
        _ = try covers.cover(for: url, wait: .zero)
        #expect(events.waitForEvent())
        let replaced = try #require(try covers.cover(for: url, wait: .zero).cover)
        #expect(replaced.bytes == Fixtures.pngV2)
        #expect(replaced.etag != first.etag)
        #expect(!FileManager.default.fileExists(atPath: first.filePath!))
        #expect(upstream.hits("/etag.png 200") == 2)
    }

    @Test func leastRecentlyUsedCoversAreEvictedUnderTheSizeLimit() throws {
        let covers = try service(cacheSizeLimit: 10_000)
        func fetch(_ name: String) throws -> CachedCover? {
            try covers.cover(for: upstream.url("/sized/\(name)"), wait: .seconds(5)).cover
        }
        _ = try fetch("a-3000")
        _ = try fetch("b-3000")
        _ = try fetch("c-3000")
        #expect(covers.cachedBytes == 9000)
        _ = try fetch("a-3000")  // a is now used more recently than b and c
        _ = try fetch("d-3000")  // 12,000 > 10,000: trim to 7,000 by dropping b, then c

        #expect(covers.cachedBytes == 6000)
        #expect(covers.state(for: upstream.url("/sized/b-3000")) == nil)
        #expect(covers.state(for: upstream.url("/sized/c-3000")) == nil)
        #expect(covers.state(for: upstream.url("/sized/a-3000"))?.name == "loaded")
        #expect(covers.state(for: upstream.url("/sized/d-3000"))?.name == "loaded")
        #expect(cacheFiles.count == 4)
        #expect(upstream.hits("/sized/a-3000") == 1)

        // The limit holds across a restart too.
        let restarted = try service(cacheSizeLimit: 10_000)
        #expect(restarted.cachedBytes == 6000)
    }

    @Test func updateChangesLimitsAtRuntimeAndASmallerLimitTrimsAtOnce() throws {
        let covers = try CoverService(
            configuration: testConfiguration(directory: directory.path, allow: [], cacheSizeLimit: 10_000),
            events: events, now: clock.function, clock: clock)
        // The address guard: refused until the allow-list is updated.
        let blocked = coverError { () throws(CoverError) in try covers.cover(for: upstream.url("/sized/a-3000"), wait: .seconds(5)) }
        #expect(blocked?.reason == .blockedAddress)
        covers.update(addressPolicy: try CoverAddressPolicy(allowing: ["127.0.0.1/32"]))
        func fetch(_ name: String) throws -> CachedCover? {
            try covers.cover(for: upstream.url("/sized/\(name)"), wait: .seconds(5)).cover
        }
        #expect(try fetch("b-3000") != nil)
        _ = try fetch("c-3000")
        _ = try fetch("d-3000")
        #expect(covers.cachedBytes == 9000)

        // A smaller limit trims at once, least recently used first, down to 70 % of it.
        covers.update(cacheSizeLimit: 5000)
        #expect(covers.cacheSizeLimit == 5000)
        #expect(covers.cachedBytes == 3000)
        #expect(covers.statistics.evictions == 2)
        #expect(covers.state(for: upstream.url("/sized/b-3000")) == nil)
        #expect(covers.state(for: upstream.url("/sized/d-3000"))?.name == "loaded")
        #expect(cacheFiles.count == 2)

        // Freshness: a shorter one makes the kept copy stale (served, revalidated in the background).
        covers.update(freshness: .seconds(10))
        clock.advance(by: 11)
        #expect(try fetch("d-3000") != nil)
        #expect(waitUntilIdle(covers))
        #expect(upstream.hits("/sized/d-3000") == 2)

        // The fetch timeout applies to the next fetch.
        covers.update(fetchTimeout: .milliseconds(300))
        let timedOut = coverError { () throws(CoverError) in try covers.cover(for: upstream.url("/slow.png"), wait: .seconds(10)) }
        #expect(timedOut?.reason == .timeout)
    }

    @Test func evictRemovesTheCopySoTheNextRequestFetchesAgain() throws {
        let covers = try service()
        let url = upstream.url("/cover.png")
        let first = try #require(try covers.cover(for: url, wait: .seconds(5)).cover)
        covers.evict(url: url)
        #expect(covers.state(for: url) == nil)
        #expect(!FileManager.default.fileExists(atPath: first.filePath!))
        #expect(cacheFiles.isEmpty)
        #expect(try covers.cover(for: url, wait: .seconds(5)).cover?.bytes == Fixtures.png)
        #expect(upstream.hits("/cover.png") == 2)
    }

    @Test func prefetchLoadsInTheBackground() throws {
        let covers = try service()
        let url = upstream.url("/photo.jpg")
        covers.prefetch(url: url)
        #expect(events.waitForEvent())
        guard case .loaded(_, let cover)? = events.all.first else {
            Issue.record("expected cover.loaded, got \(events.all)")
            return
        }
        #expect(events.all.first?.name == "cover.loaded")
        #expect(try covers.cover(for: url, wait: .zero) == .ready(cover))
        covers.prefetch(url: url)  // cached: nothing to do
        #expect(waitUntilIdle(covers))
        #expect(upstream.hits("/photo.jpg") == 1)
    }

    @Test func anUnwritableCacheServesWithoutCaching() throws {
        let covers = try service()
        // The directory vanishes and a file takes its place: every write fails.
        try FileManager.default.removeItem(atPath: directory.path)
        _ = FileManager.default.createFile(atPath: directory.path, contents: Data())

        let url = upstream.url("/cover.png")
        let cover = try #require(try covers.cover(for: url, wait: .seconds(5)).cover)
        #expect(cover.content == .memory(Fixtures.png))
        #expect(cover.mediaType == "image/png")
        #expect(covers.state(for: url) == nil)
        try FileManager.default.removeItem(atPath: directory.path)
    }

    @Test func aFetchEvictedWhileRunningIsNotStored() throws {
        let covers = try service()
        let url = upstream.url("/coalesce.png")
        #expect(try covers.cover(for: url, wait: .zero) == .loading)
        covers.evict(url: url)
        #expect(events.waitForEvent())
        #expect(waitUntilIdle(covers))
        #expect(covers.state(for: url) == nil)
        #expect(cacheFiles.isEmpty)
    }
}
