import AlbumStoreContract
import Covers
import Essentials
import Foundation
import HTTPServer
import Library
import Storage
import Synchronization

@testable import BlueLibraryServer

/// The app on the in-memory store (`AlbumStoreContract`'s `InMemoryAlbumStore` and records),
/// with covers from `InMemoryCovers` instead of the network and a `ManualClock` for the ages
/// it keeps: for route suites whose subject is what a route answers, answered in process
/// (`InProcessClient`). Nothing of it touches a database file; the cover cache and the lock
/// live in a fresh temporary directory.
public enum InMemoryApp {
    public struct Parts: Sendable {
        public let app: BlueLibraryApp
        public let routes: InProcessClient
        public let store: InMemoryAlbumStore
        public let records: InMemoryServerRecords
        public let covers: InMemoryCovers
        public let clock: ManualClock
    }

    /// Just the app (its parts are in `make`).
    public static func app(_ adjust: (inout ServeConfiguration) -> Void = { _ in }) throws -> BlueLibraryApp {
        try make(adjust).app
    }

    public static func make(_ adjust: (inout ServeConfiguration) -> Void = { _ in }) throws -> Parts {
        var config = ServeConfiguration()
        config.host = "127.0.0.1"
        config.port = 0
        config.accessLog = false
        config.eventLoops = 1
        config.workers = 1
        config.dataDirectory = TestApp.temporaryDirectory()
        config.diskReserveBytes = 0
        adjust(&config)
        let records = InMemoryServerRecords()
        let store = InMemoryAlbumStore(idempotency: records.idempotency)
        let covers = InMemoryCovers()
        let clock = ManualClock()
        let app = try BlueLibraryApp(
            configuration: config, logger: JSONLogger(level: .error),
            backend: InMemoryBackend(albums: store, records: records), coverFetcher: covers, monotonic: clock)
        return Parts(app: app, routes: InProcessClient(app), store: store, records: records, covers: covers, clock: clock)
    }
}

/// The in-memory store behind the app's one seam to its database.
struct InMemoryBackend: StoreBackend {
    let albums: any AlbumStore
    let records: any ServerRecordStore

    init(albums: InMemoryAlbumStore, records: InMemoryServerRecords) {
        self.albums = albums
        self.records = records
    }

    var location: String { "memory" }
    var isShared: Bool { false }
    var isDiskFull: Bool { false }
    func isDiskFull(_ error: any Error) -> Bool { false }
    var ping: (@Sendable () -> (any UnavailableDependency)?)? { nil }
    /// Nothing else writes to this store.
    func makeStoredStateSignal() throws -> any StoredStateSignal { Unchanging() }
    func makeCommitWakeup() -> (any CommitWakeup)? { nil }
    func makeEventRelay() -> (any EventRelay)? { nil }
    func register(in metrics: Metrics) {}
    func close(logger: JSONLogger) {}

    struct Unchanging: StoredStateSignal {
        func hasChanged() throws -> Bool { false }
    }
}

/// Covers without a network: every URL answers the same small PNG, but a URL whose path ends in
/// `/missing.png` answers 404; `fetches` counts what was asked.
public final class InMemoryCovers: CoverFetching {
    private let asked = Mutex<[String]>([])

    public init() {}

    /// The URLs fetched so far, in order.
    public var fetches: [String] { asked.withLock { $0 } }

    public func fetch(_ request: UpstreamRequest) -> Result<UpstreamResponse, CoverError> {
        asked.withLock { $0.append(request.url.description) }
        if request.url.description.hasSuffix("/missing.png") { return .failure(CoverError(.upstreamStatus, upstreamStatus: 404, detail: "The cover server answered 404.")) }
        return .success(.image(bytes: Self.png, format: .png, etag: "\"1\"", lastModified: nil))
    }

    /// A 1x1 PNG.
    public static let png: [UInt8] = Array(Data(base64Encoded:
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==") ?? Data())
}
