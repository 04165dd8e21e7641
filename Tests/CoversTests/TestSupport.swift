import Covers
import Dispatch
import Essentials
import Foundation
import Library
import Synchronization

/// A clock the test moves by hand: the wall clock (`function`, for what covers store) and the
/// monotonic one (for what they keep in memory) move together, as they do in real life.
final class CoverTestClock: MonotonicClock {
    private static let start = Date(timeIntervalSince1970: 1_714_564_800)
    private let current = Mutex(CoverTestClock.start)

    var now: Date { current.withLock { $0 } }

    /// Nanoseconds since the test started (plus one second, so zero is never a reading).
    func nanoseconds() -> UInt64 {
        UInt64((now.timeIntervalSince(Self.start) * 1e9).rounded()) + 1_000_000_000
    }

    func advance(by seconds: Double) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }

    var function: @Sendable () -> Date { { self.now } }
}

/// Records published cover events; `next` waits for one.
final class RecordingSink: CoverEventSink {
    private let events = Mutex<[CoverEvent]>([])
    private let arrived = DispatchSemaphore(value: 0)

    func publish(_ event: CoverEvent) {
        events.withLock { $0.append(event) }
        arrived.signal()
    }

    var all: [CoverEvent] { events.withLock { $0 } }

    /// Waits up to `seconds` for one more event to have arrived.
    func waitForEvent(seconds: Double = 10) -> Bool {
        arrived.wait(timeout: .now() + .milliseconds(Int(seconds * 1000))) == .success
    }
}

/// The configuration of a service the tests' upstream on 127.0.0.1 may be fetched from.
func testConfiguration(
    directory: String, allow: [String] = ["127.0.0.1/32"], maxBodyBytes: Int = 64 * 1024,
    totalTimeout: Duration = .seconds(5), cacheSizeLimit: Int = 512 * 1024 * 1024
) throws -> CoverServiceConfiguration {
    CoverServiceConfiguration(
        cacheDirectory: directory, cacheSizeLimit: cacheSizeLimit, freshness: .seconds(3600),
        failureMemory: .seconds(30),
        fetcher: CoverFetcherConfiguration(
            connectTimeout: .seconds(2), totalTimeout: totalTimeout, maxBodyBytes: maxBodyBytes,
            addressPolicy: try CoverAddressPolicy(allowing: allow)))
}

extension CoverResult {
    var cover: CachedCover? {
        if case .ready(let cover) = self { return cover }
        return nil
    }
}

extension CachedCover {
    /// The bytes, from the file or memory.
    var bytes: [UInt8]? {
        switch content {
        case .file(let path): FileManager.default.contents(atPath: path).map { Array($0) }
        case .memory(let bytes): bytes
        }
    }

    var filePath: String? {
        if case .file(let path) = content { return path }
        return nil
    }
}

/// The error `body` throws, or nil.
func coverError(_ body: () throws(CoverError) -> CoverResult) -> CoverError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}
