import AlbumStoreContract
import Essentials
import Foundation
import HTTPTestSupport
import Library
import Postgres
import Storage
import TestThreads
import Testing

/// Keyset pages of the value sorts read their index on PostgreSQL too (`albums_by_title_sort` on the
/// folded `title_key`, …): an index scan from the anchor, never a sort of the library. Pages in
/// the library's own order walk the buckets in order and each bucket's albums by position.
@Suite("PostgreSQL store: page plans", .ownThreads)
struct PostgresPagePlanTests {
    @Test func keysetPagesOfEverySortReadTheirIndexWithoutASort() throws {
        let url = try PostgresServer.shared().makeDatabase()
        let store = try PostgresAlbumStore(
            pool: PostgresPool(PostgresPool.Configuration(url: url, size: 2)),
            configuration: PostgresAlbumStore.Configuration(bucketSize: 64))
        try store.write(.default) { writer throws in
            for number in 0..<3000 {
                let millis = 1_600_000_000_000 + Int64((number * 7919) % 3000) * 1000
                try writer.insert(Album(
                    id: AlbumStoreContract.id(UInt64(number + 1)), title: "Title \((number * 31) % 997)",
                    artist: "Artist \(number % 211)", genre: "Genre \(number % 53)", year: 1950 + number % 70, coverUrl: nil,
                    createdAt: Timestamp.date(milliseconds: millis), updatedAt: Timestamp.date(milliseconds: millis)),
                    at: number)
            }
        }
        let analyze = try PostgresConnection(url: url)
        try analyze.execute("ANALYZE")
        let anchorID = AlbumStoreContract.id(1500)
        let cases: [(AlbumSort.Field, SortValue, String)] = [
            (.title, .text("Title 500"), "albums_by_title_sort"),
            (.artist, .text("Artist 100"), "albums_by_artist_sort"),
            (.genre, .text("genre 20"), "albums_by_genre_sort"),
            (.year, .integer(1990), "albums_by_year"),
            (.createdAt, .integer(1_600_001_000_000), "albums_by_created"),
        ]
        for (field, value, index) in cases {
            for descending in [false, true] {
                let plans = try store.pagePlans(
                    .default, matching: .all, sort: AlbumSort(field, descending: descending),
                    from: .afterValue(value, anchorID), limit: 20)
                #expect(plans.count == 1)
                #expect(plans.allSatisfy { $0.contains(index) && !$0.contains("Sort") }, "\(field) \(descending): \(plans)")
            }
        }
        // A stretch of a value order (a view's offset counts and reads it): the same index, from
        // both ends, never a sort.
        for (field, value, index) in cases {
            for descending in [false, true] {
                let range = SortRange(after: SortKey(value, anchorID), before: nil)
                for limit in [1, 20] {  // (at a third of this small table, the planner rightly scans it)
                    let plans = try store.rangePlans(
                        .default, matching: .all, sort: AlbumSort(field, descending: descending), in: range, skipping: 100, limit: limit)
                    #expect(plans.count == 2)
                    #expect(plans.allSatisfy { $0.contains(index) && !$0.contains("Sort") && !$0.contains("Seq Scan") },
                            "\(field) \(descending) limit \(limit): \(plans)")
                }
            }
        }
        for anchor in [SortAnchor.start, .afterAlbum(anchorID)] {
            for filter in [AlbumFilter.all, AlbumFilter(text: "title 1")] {
                for descending in [false, true] {
                    let plans = try store.pagePlans(
                        .default, matching: filter, sort: AlbumSort(.position, descending: descending), from: anchor, limit: 20)
                    let walk = try #require(plans.last)
                    // (Filtered, the planner may read this small table whole rather than per bucket.)
                    #expect(walk.contains("buckets_pkey") && (!filter.isEmpty || walk.contains("albums_by_position")), "\(plans)")
                    // At most an incremental sort inside one bucket (presorted by the bucket key).
                    #expect(plans.allSatisfy { !$0.replacingOccurrences(of: "Incremental Sort", with: "").contains("Sort  (") },
                            "\(plans)")
                }
            }
        }
    }
}
