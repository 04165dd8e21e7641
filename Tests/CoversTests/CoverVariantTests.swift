import Dispatch
import Foundation
import HTTPTestSupport
import Images
import Library
import Synchronization
import TestThreads
import Testing

@testable import Covers

/// Sized variants made from covers a real upstream on 127.0.0.1 serves (`/etag.png` serves
/// whatever image the test sets), each checked by decoding it with the `vips` command.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads)
final class CoverVariantTests {
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

    func service(cacheSizeLimit: Int = 512 * 1024 * 1024) throws -> CoverService {
        try CoverService(
            configuration: testConfiguration(directory: directory.path, maxBodyBytes: 4 * 1024 * 1024, cacheSizeLimit: cacheSizeLimit),
            now: clock.function, clock: clock)
    }

    /// Makes `/etag.png` serve `bytes` under the entity tag `etag`.
    func serve(_ bytes: [UInt8], etag: String = "\"v1\"") {
        upstream.current.withLock { $0 = (bytes, etag) }
    }

    func variant(_ size: Int, _ format: CoverVariantFormat) -> CoverVariant { CoverVariant(size: size, format: format)! }

    @Test func onlyTheFixedSizesExist() {
        #expect(CoverVariant(size: 100, format: .webp) == nil)
        #expect(CoverVariant(size: 0, format: .jpegOrPNG) == nil)
        #expect(CoverVariant.allowedSizes.allSatisfy { CoverVariant(size: $0, format: .webp) != nil })
    }

    /// 50 threads (not `concurrentPerform`, whose width is the CPU count) start together; the
    /// upstream holds the original until all 50 have called, so every one of them is inside the
    /// service when the original arrives and they race for the variant at once.
    @Test func fiftyConcurrentRequestsMakeTheVariantOnce() throws {
        serve(try TestImages.photo(width: 1500, height: 1500))
        let covers = try service()
        let url = upstream.url("/held.png")
        let etags = Mutex<[String]>([])
        let entered = Atomic<Int>(0)
        let wanted = variant(256, .webp)
        let start = DispatchGroup()
        start.enter()
        let done = DispatchGroup()
        for _ in 0..<50 {
            done.enter()
            Thread {
                start.wait()
                entered.wrappingAdd(1, ordering: .relaxed)
                let cover = try? covers.variant(wanted, for: url, wait: .seconds(60)).cover
                etags.withLock { $0.append(cover?.etag ?? "failed") }
                done.leave()
            }.start()
        }
        start.leave()
        #expect(eventually(timeout: .seconds(30)) { entered.load(ordering: .relaxed) == 50 && upstream.hits("/held.png") == 1 })
        #expect(etags.withLock { $0 }.isEmpty, "nobody is answered before the original arrives")
        upstream.release.signal()
        done.wait()
        let all = etags.withLock { $0 }
        #expect(all.count == 50 && Set(all).count == 1 && all[0] != "failed", "\(Set(all))")
        let statistics = covers.statistics
        #expect(statistics.variantsMade == 1)
        #expect(upstream.hits("/held.png") == 1)
        #expect((statistics.hits, statistics.misses) == (0, 0), "variant requests are not cover hits or misses")
        let made = try #require(try covers.variant(variant(256, .webp), for: url, wait: .seconds(5)).cover)
        #expect(covers.statistics.variantHits >= 1)
        let decoded = try TestImages.inspect(try #require(made.bytes))
        #expect((decoded.width, decoded.height, decoded.loader) == (256, 256, "webpload"))
        #expect(made.mediaType == "image/webp")
        #expect(covers.statistics.variantsMade == 1, "the next request is a cache hit")
    }

    @Test func variantsLiveInTheCacheSurviveARestartAndGoWithTheOriginal() throws {
        serve(try TestImages.photo(width: 900, height: 600))
        let url = upstream.url("/etag.png")
        var covers = try service()
        let original = try #require(try covers.cover(for: url, wait: .seconds(5)).cover)
        let small = try #require(try covers.variant(variant(128, .jpegOrPNG), for: url, wait: .seconds(10)).cover)
        let large = try #require(try covers.variant(variant(512, .webp), for: url, wait: .seconds(10)).cover)
        #expect(small.mediaType == "image/jpeg" && large.mediaType == "image/webp")
        #expect(small.etag != large.etag && small.etag != original.etag)
        #expect(small.filePath?.hasSuffix(".jpg") == true && large.filePath?.hasSuffix(".webp") == true)
        #expect(covers.statistics.cachedCovers == 1 && covers.statistics.cachedVariants == 2)
        #expect(covers.statistics.cachedBytes == original.length + small.length + large.length, "one size budget")

        // A restart finds them on disk: nothing is made again.
        covers = try service()
        #expect(covers.cachedVariant(variant(128, .jpegOrPNG), for: url)?.etag == small.etag)
        #expect(try covers.variant(variant(512, .webp), for: url, wait: .seconds(5)).cover?.etag == large.etag)
        #expect(covers.statistics.variantsMade == 0)

        // Evicting the original evicts its variants.
        covers.evict(url: url)
        #expect(covers.statistics.cachedCovers == 0)
        #expect(!FileManager.default.fileExists(atPath: try #require(small.filePath)))
        #expect(!FileManager.default.fileExists(atPath: try #require(large.filePath)))
        #expect(covers.cachedVariant(variant(128, .jpegOrPNG), for: url) == nil)
        _ = try covers.variant(variant(128, .jpegOrPNG), for: url, wait: .seconds(10))
        #expect(covers.statistics.variantsMade == 1)
    }

    @Test func newBytesFromARevalidationReplaceTheVariants() throws {
        serve(try TestImages.photo(width: 900, height: 600), etag: "\"wide\"")
        let url = upstream.url("/etag.png")
        let covers = try service()
        let wide = try #require(try covers.variant(variant(64, .jpegOrPNG), for: url, wait: .seconds(10)).cover)
        #expect(try TestImages.inspect(try #require(wide.bytes)).height == 43)

        serve(try TestImages.photo(width: 600, height: 900), etag: "\"tall\"")
        clock.advance(by: 7200)
        // The stale original (and its variant) is served while it is revalidated.
        _ = try covers.cover(for: url, wait: .seconds(5))
        #expect(eventually { covers.isIdle })
        #expect(upstream.hits("/etag.png 200") == 2)
        #expect(!FileManager.default.fileExists(atPath: try #require(wide.filePath)), "the old variant went with the old bytes")
        let tall = try #require(try covers.variant(variant(64, .jpegOrPNG), for: url, wait: .seconds(10)).cover)
        let decoded = try TestImages.inspect(try #require(tall.bytes))
        #expect((decoded.width, decoded.height) == (43, 64))
    }

    @Test func theLeastRecentlyUsedGoFirstVariantsIncluded() throws {
        serve(try TestImages.photo(width: 1200, height: 1200))
        let url = upstream.url("/etag.png")
        let original = try #require(try service().cover(for: url, wait: .seconds(5)).cover)
        // Room for the original and a little more: large variants push out what was used least.
        let covers = try service(cacheSizeLimit: original.length + 3000)
        for size in [1024, 512, 256, 128, 64] {
            _ = try covers.variant(variant(size, .jpegOrPNG), for: url, wait: .seconds(10))
            #expect(covers.statistics.cachedBytes <= original.length + 3000)
        }
        #expect(covers.statistics.evictions > 0)
    }

    /// A scroller asks only for sizes: every variant hit counts as a use of its original, so
    /// the originals are not the first to be evicted (and fetched again) under cache pressure.
    @Test func variantHitsKeepTheirOriginalsInTheCache() throws {
        let photo = try TestImages.photo(width: 1200, height: 1200)
        serve(photo)
        let probe = try service()
        let one = try #require(try probe.cover(for: upstream.url("/etag.png?probe"), wait: .seconds(5)).cover)
        let small = try #require(try probe.variant(variant(64, .jpegOrPNG), for: upstream.url("/etag.png?probe"), wait: .seconds(10)).cover)
        probe.evict(url: upstream.url("/etag.png?probe"))
        // Room for two originals with their variants, not three; a trim removes only what it must.
        var configuration = try testConfiguration(
            directory: directory.path, maxBodyBytes: 4 * 1024 * 1024, cacheSizeLimit: 2 * (one.length + small.length) + one.length / 2)
        configuration.trimRatio = 1
        let covers = try CoverService(configuration: configuration, now: clock.function, clock: clock)
        let urls = ["a", "b", "c"].map { upstream.url("/etag.png?\($0)") }
        let before = upstream.hits("/etag.png 200")
        // As the server does: the event loop's cached variant first, else the worker's wait.
        func show(_ index: Int) throws {
            if covers.cachedVariant(variant(64, .jpegOrPNG), for: urls[index]) != nil { return }
            #expect(try covers.variant(variant(64, .jpegOrPNG), for: urls[index], wait: .seconds(10)).cover != nil)
        }
        try show(0)
        try show(1)
        try show(0)  // a: a cached variant, used after b
        try show(2)  // c pushes out the least recently used pair: b's
        try show(0)  // a's variant and original are still cached
        #expect(covers.statistics.evictions > 0)
        #expect(upstream.hits("/etag.png 200") - before == 3, "one upstream fetch per cover")
        #expect(covers.statistics.variantsMade == 3)
    }

    /// A broken original fails once; repeated requests are answered from memory (no decode)
    /// for the failure memory, per variant and original bytes.
    @Test func variantFailuresAreRememberedNotCached() throws {
        let covers = try service()
        serve(try TestImages.corruptPNG(), etag: "\"broken\"")
        let url = upstream.url("/etag.png?remembered")
        for _ in 0..<3 {
            let error = coverError { () throws(CoverError) in try covers.variant(variant(256, .webp), for: url, wait: .seconds(10)) }
            #expect(error?.reason == .imageUnreadable)
        }
        #expect(covers.statistics.variantFailures == 1, "decoded once")
        #expect(covers.statistics.cachedVariants == 0)
        // Another size is another variant: tried once itself.
        _ = coverError { () throws(CoverError) in try covers.variant(variant(128, .webp), for: url, wait: .seconds(10)) }
        #expect(covers.statistics.variantFailures == 2)
        // Past the failure memory it is tried again.
        clock.advance(by: 120)
        _ = coverError { () throws(CoverError) in try covers.variant(variant(256, .webp), for: url, wait: .seconds(10)) }
        #expect(covers.statistics.variantFailures == 3)
        // New bytes (a new entity tag) are not blamed for the old ones' failure.
        covers.evict(url: url)
        serve(try TestImages.photo(width: 400, height: 400), etag: "\"fixed\"")
        #expect(try covers.variant(variant(256, .webp), for: url, wait: .seconds(10)).cover != nil)
    }

    /// Only a bomb or undecodable bytes blame the original; an encoder failure is the server's.
    @Test func imageErrorsBecomeCoverReasonsThatBlameTheRightSide() {
        let cases: [(ImageError.Reason, CoverError.Reason)] = [
            (.tooManyPixels, .imageTooLarge), (.unreadable, .imageUnreadable), (.corrupt, .imageUnreadable),
            (.encodeFailed, .variantEncodeFailed), (.unavailable, .imagesUnavailable),
        ]
        for (image, cover) in cases {
            let error = CoverVariants.coverError(ImageError(image, detail: "x"))
            #expect(error.reason == cover && error.reason.isVariantFailure, "\(image)")
            #expect(error.reason.blamesTheOriginal == [.tooManyPixels, .unreadable, .corrupt].contains(image))
        }
        #expect(!CoverVariants.coverError(ImageError(.encodeFailed, detail: "x")).detail.contains("corrupt"))
    }

    @Test func hostileOriginalsFailClearlyAndLeaveNoVariant() throws {
        let covers = try service()
        let cases: [(String, [UInt8], CoverError.Reason)] = [
            ("jpeg-bomb", try TestImages.bomb(fileExtension: "jpg"), .imageTooLarge),
            ("png-bomb", try TestImages.bomb(fileExtension: "png"), .imageTooLarge),
            ("gif-bomb", try TestImages.bomb(fileExtension: "gif"), .imageTooLarge),
            ("truncated", TestImages.truncated(try TestImages.photo(width: 800, height: 800)), .imageUnreadable),
            ("corrupt", try TestImages.corruptPNG(), .imageUnreadable),
        ]
        for (index, (name, bytes, reason)) in cases.enumerated() {
            serve(bytes)
            let url = upstream.url("/etag.png?\(name)")
            let error = coverError { () throws(CoverError) in try covers.variant(variant(256, .webp), for: url, wait: .seconds(10)) }
            #expect(error?.reason == reason, "\(name): \(String(describing: error))")
            if reason == .imageTooLarge { #expect(error?.detail.contains("30000 x 30000") == true) }
            #expect(covers.statistics.cachedCovers == index + 1, "\(name): only the originals are cached")
            #expect(covers.statistics.variantFailures == index + 1)
        }
        #expect(covers.statistics.variantsMade == 0)
    }
}
