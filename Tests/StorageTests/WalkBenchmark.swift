import Foundation
import HTTPTestSupport
import Library
import Storage
import TestThreads
import Testing

/// First and deep cursor pages of a library and of a view over several libraries, through
/// the facade and `Libraries` on SQLite (exact-walk cursors). Prints p50/p99; asserts nothing
/// about time. Run: `BLUELIBRARY_WALK_BENCH=1 swift test --filter WalkBenchmark` (sizes:
/// BLUELIBRARY_WALK_BENCH_ALBUMS total albums, BLUELIBRARY_WALK_BENCH_SOURCES view sources).
@Suite("Walk benchmark", .enabled(if: ProcessInfo.processInfo.environment["BLUELIBRARY_WALK_BENCH"] == "1"), .ownThreads)
struct WalkBenchmark {
    let environment = ProcessInfo.processInfo.environment

    @Test func firstAndDeepPages() throws {
        let total = Int(environment["BLUELIBRARY_WALK_BENCH_ALBUMS"] ?? "") ?? 200_000
        let sourceCount = Int(environment["BLUELIBRARY_WALK_BENCH_SOURCES"] ?? "") ?? 10
        let directory = try TemporaryDirectory()
        let store = try SQLiteAlbumStore(path: directory.file("walk.sqlite"))
        var random = SeededGenerator(seed: 7)
        let libraries = Libraries(store: store, clock: { Date(timeIntervalSince1970: 1_700_000_000) }, ids: .random(clock: { Date() }))
        let sources = (0..<sourceCount).map { LibraryID(rawValue: "part-\($0)") }
        for source in sources { _ = try libraries.create(id: source) }
        func fill(_ library: LibraryID, _ count: Int) throws {
            try store.write(library) { writer in
                for number in 0..<count { try writer.insert(StorageBenchmark.album(number, using: &random), at: number) }
                _ = try writer.bumpVersion()
            }
        }
        try fill(.default, total)
        for source in sources { try fill(source, total / sourceCount) }
        let view = try libraries.createView(id: ViewID(rawValue: "parts"), sources: sources)
        let limit = 50
        let rounds = 300

        func report(_ name: String, size: Int = 0, _ page: (PageStart) throws -> AlbumListPage) throws {
            let first = try StorageBenchmark.samples(rounds) { _ = try page(.first) }
            let deepCursor = try #require(try page(.offset((size == 0 ? total : size) / 2)).next)
            let deep = try StorageBenchmark.samples(rounds) { _ = try page(.cursor(deepCursor)) }
            print("| \(name) | \(first.p50) | \(first.p99) | \(deep.p50) | \(deep.p99) |")
        }
        print("| list | first p50 | first p99 | deep cursor p50 | deep cursor p99 |")
        print("|---|---|---|---|---|")
        try report("library of \(total)") { try libraries.defaultLibrary.page(PageRequest(start: $0, limit: limit)) }
        try report("view of \(sourceCount) x \(total / sourceCount)") { try libraries.page(view: view.id, PageRequest(start: $0, limit: limit)) }
        try report("library, -position") {
            try libraries.defaultLibrary.page(PageRequest(query: AlbumQuery(sort: AlbumSort(.position, descending: true)), start: $0, limit: limit))
        }
        try report("library, title") {
            try libraries.defaultLibrary.page(PageRequest(query: AlbumQuery(sort: AlbumSort(.title)), start: $0, limit: limit))
        }
        try report("one part, title", size: total / sourceCount) {
            try libraries.facade(sources[0]).page(PageRequest(query: AlbumQuery(sort: AlbumSort(.title)), start: $0, limit: limit))
        }
        try report("view, title") { try libraries.page(view: view.id, PageRequest(query: AlbumQuery(sort: AlbumSort(.title)), start: $0, limit: limit)) }
    }
}
