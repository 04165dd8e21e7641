import Crypto
import Dispatch
import Foundation
import HTTPTestSupport
import Library
import Synchronization
import TestThreads
import Testing

@testable import Covers

/// The fetcher against a real upstream on 127.0.0.1: every way a fetch can end.
@Suite(.serialized, .timeLimit(.minutes(1)), .ownThreads)
final class CoverFetchTests {
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

    func service(allow: [String] = ["127.0.0.1/32"], totalTimeout: Duration = .seconds(5)) throws -> CoverService {
        try CoverService(
            configuration: testConfiguration(directory: directory.path, allow: allow, totalTimeout: totalTimeout),
            events: events, now: clock.function, clock: clock)
    }

    /// Image files in the cache directory.
    var cachedImages: [String] { directory.files().filter { CoverCacheRecord.isCacheFileName($0) } }

    @Test func missFetchesOnceThenHitsServeTheFile() throws {
        let covers = try service()
        let url = upstream.url("/cover.png")
        #expect(covers.state(for: url) == nil)

        let first = try #require(try covers.cover(for: url, wait: .seconds(5)).cover)
        #expect(first.bytes == Fixtures.png)
        #expect(first.mediaType == "image/png")
        #expect(first.length == Fixtures.png.count)
        #expect(first.etag == "\"" + SHA256.hex(SHA256.hash(Fixtures.png)).prefix(32) + "\"")
        let path = try #require(first.filePath)
        #expect(path.hasPrefix(directory.path + "/"))
        #expect(!path.hasSuffix("/cover.png"))

        let second = try #require(try covers.cover(for: url, wait: .zero).cover)
        #expect(second == first)
        #expect(upstream.hits("/cover.png") == 1)
        #expect(covers.state(for: url) == .loaded(first))
        #expect(events.all == [.loaded(url: url, cover: first)])
        #expect(cachedImages.count == 1)
    }

    @Test func mediaTypeComesFromTheBytesNotTheHeader() throws {
        let cover = try #require(try service().cover(for: upstream.url("/photo.jpg"), wait: .seconds(5)).cover)
        #expect(cover.mediaType == "image/jpeg")
        #expect(cover.filePath?.hasSuffix(".jpg") == true)
    }

    @Test func twoHundredConcurrentRequestsCauseOneUpstreamFetch() throws {
        let covers = try service()
        let url = upstream.url("/coalesce.png")
        let start = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        let results = Mutex<[CoverResult]>([])
        for _ in 0..<200 {
            done.enter()
            Thread {
                start.wait()
                let result = try? covers.cover(for: url, wait: .seconds(20))
                results.withLock { $0.append(result ?? .loading) }
                done.leave()
            }.start()
        }
        for _ in 0..<200 { start.signal() }
        #expect(done.wait(timeout: .now() + 30) == .success)

        let covers200 = results.withLock { $0 }.compactMap(\.cover)
        #expect(covers200.count == 200)
        #expect(Set(covers200.map(\.etag)).count == 1)
        #expect(upstream.hits("/coalesce.png") == 1)
        #expect(events.all.count == 1)
    }

    @Test func concurrentFetchesStayWithinTheBound() throws {
        var configuration = try testConfiguration(directory: directory.path)
        configuration.maxConcurrentFetches = 3
        let covers = try CoverService(configuration: configuration, events: events, now: clock.function, clock: clock)
        for index in 0..<12 { covers.prefetch(url: upstream.url("/concurrent/\(index).png")) }
        for _ in 0..<12 { #expect(events.waitForEvent()) }
        #expect(upstream.hits("/concurrent") == 12)
        let peak = upstream.concurrency.withLock { $0.peak }
        #expect(peak <= 3)
        #expect(peak >= 2)
        #expect(events.all.allSatisfy { $0.name == "cover.loaded" })
    }

    @Test func aMissStillLoadingAfterTheWaitSaysLoading() throws {
        let covers = try service()
        let url = upstream.url("/coalesce.png")
        #expect(try covers.cover(for: url, wait: .milliseconds(20)) == .loading)
        #expect(covers.state(for: url) == .loading)
        let cover = try covers.cover(for: url, wait: .seconds(5)).cover
        #expect(cover?.bytes == Fixtures.png)
        #expect(upstream.hits("/coalesce.png") == 1)
    }

    @Test func slowUpstreamTimesOut() throws {
        let covers = try service(totalTimeout: .milliseconds(400))
        // The upstream would answer after its delay; the fetch gives up at its total timeout first.
        let error = coverError { () throws(CoverError) in try covers.cover(for: upstream.url("/slow.png"), wait: .seconds(10)) }
        #expect(error?.reason == .timeout)
        #expect(cachedImages.isEmpty)
    }

    @Test func status500IsReportedAndRememberedBriefly() throws {
        let covers = try service()
        let url = upstream.url("/error500")
        let error = coverError { () throws(CoverError) in try covers.cover(for: url, wait: .seconds(5)) }
        #expect(error?.reason == .upstreamStatus)
        #expect(error?.upstreamStatus == 500)
        #expect(events.all == [.failed(url: url, error: error!)])

        // Negative cache: answered from memory, the upstream is not asked again...
        let again = coverError { () throws(CoverError) in try covers.cover(for: url, wait: .seconds(5)) }
        #expect(again == error)
        #expect(upstream.hits("/error500") == 1)
        guard case .failed(let remembered, let at) = covers.state(for: url) else {
            Issue.record("state should be failed")
            return
        }
        #expect(remembered == error)
        #expect(at == clock.now)
        // ...until the failure memory (30 s here) has passed.
        clock.advance(by: 31)
        #expect(covers.state(for: url) == nil)
        _ = coverError { () throws(CoverError) in try covers.cover(for: url, wait: .seconds(5)) }
        #expect(upstream.hits("/error500") == 2)
    }

    @Test func status404IsReported() throws {
        let covers = try service()
        let error = coverError { () throws(CoverError) in try covers.cover(for: upstream.url("/missing.png"), wait: .seconds(5)) }
        #expect(error?.reason == .upstreamStatus)
        #expect(error?.upstreamStatus == 404)
        #expect(cachedImages.isEmpty)
    }

    @Test func redirectLoopIsRefusedAtTheFirstRepeat() throws {
        let covers = try service()
        let error = coverError { () throws(CoverError) in try covers.cover(for: upstream.url("/loop"), wait: .seconds(5)) }
        #expect(error?.reason == .badRedirect)
        #expect(upstream.hits("/loop") == 1)
    }

    @Test func moreThanFiveRedirectsAreRefused() throws {
        let covers = try service()
        let error = coverError { () throws(CoverError) in try covers.cover(for: upstream.url("/chain/0"), wait: .seconds(5)) }
        #expect(error?.reason == .badRedirect)
        #expect(error?.detail.contains("more than 5") == true)
        #expect(upstream.hits("/chain") == 6)
    }

    @Test func aRedirectToAnImageIsFollowed() throws {
        let cover = try #require(try service().cover(for: upstream.url("/moved.png"), wait: .seconds(5)).cover)
        #expect(cover.bytes == Fixtures.png)
        #expect(cover.url == upstream.url("/moved.png"))
    }

    @Test func bodyOverTheLimitByContentLengthIsAbortedNotCached() throws {
        let covers = try service()
        let error = coverError { () throws(CoverError) in try covers.cover(for: upstream.url("/big.png"), wait: .seconds(5)) }
        #expect(error?.reason == .tooLarge)
        #expect(error?.detail.contains("announced") == true)
        #expect(cachedImages.isEmpty)
    }

    @Test func streamedBodyOverTheLimitIsAbortedNotCached() throws {
        let covers = try service()
        let error = coverError { () throws(CoverError) in try covers.cover(for: upstream.url("/big-stream.png"), wait: .seconds(5)) }
        #expect(error?.reason == .tooLarge)
        #expect(error?.detail.contains("sent more") == true)
        #expect(cachedImages.isEmpty)
    }

    @Test func htmlInsteadOfAnImageIsRefused() throws {
        let covers = try service()
        for path in ["/page.html", "/fake.png"] {
            let error = coverError { () throws(CoverError) in try covers.cover(for: upstream.url(path), wait: .seconds(5)) }
            #expect(error?.reason == .notAnImage, "\(path)")
            #expect(error?.upstreamStatus == 200)
        }
        #expect(cachedImages.isEmpty)
    }

    @Test func droppedConnectionIsAClearErrorAndNothingIsCached() throws {
        let covers = try service()
        let error = coverError { () throws(CoverError) in try covers.cover(for: upstream.url("/dropped.png"), wait: .seconds(5)) }
        #expect(error?.reason == .connectionDropped)
        #expect(cachedImages.isEmpty)
        // The service (and its pooled curl handles) still work.
        #expect(try covers.cover(for: upstream.url("/cover.png"), wait: .seconds(5)).cover?.bytes == Fixtures.png)
    }

    @Test func loopbackIsRefusedWithoutTheAllowList() throws {
        let covers = try service(allow: [])
        for url in [upstream.url("/cover.png"), "http://localhost:\(upstream.port)/cover.png",
                    "http://[::ffff:127.0.0.1]:\(upstream.port)/cover.png"] {
            let error = coverError { () throws(CoverError) in try covers.cover(for: url, wait: .seconds(5)) }
            #expect(error?.reason == .blockedAddress, "\(url)")
        }
        #expect(upstream.hits("/cover.png") == 0)
    }

    @Test func cloudMetadataIsRefusedAlsoBehindARedirect() throws {
        let strict = try service(allow: [])
        let direct = coverError { () throws(CoverError) in
            try strict.cover(for: "http://169.254.169.254/latest/meta-data/", wait: .seconds(5))
        }
        // Refused before connecting (a connect attempt would end in a timeout, not this reason).
        #expect(direct?.reason == .blockedAddress)

        let open = try service()
        let redirected = coverError { () throws(CoverError) in
            try open.cover(for: upstream.url("/to-metadata"), wait: .seconds(5))
        }
        #expect(redirected?.reason == .blockedAddress)
        #expect(upstream.hits("/to-metadata") == 1)
    }

    @Test func theAllowListOpensLoopbackByRangeOrHostName() throws {
        #expect(try service(allow: ["127.0.0.1/32"]).cover(for: upstream.url("/cover.png"), wait: .seconds(5)).cover != nil)
        let byName = try service(allow: ["localhost"])
        byName.evict(url: "http://localhost:\(upstream.port)/cover.png")
        #expect(try byName.cover(for: "http://localhost:\(upstream.port)/cover.png", wait: .seconds(5)).cover != nil)
    }

    @Test func invalidURLsFailWithoutAFetch() throws {
        let covers = try service()
        for url in ["ftp://127.0.0.1/x.png", "not a url", "http://user:secret@127.0.0.1/x.png"] {
            let error = coverError { () throws(CoverError) in try covers.cover(for: url, wait: .seconds(1)) }
            #expect(error?.reason == .invalidURL, "\(url)")
        }
        #expect(events.all.isEmpty)
    }
}
