import AlbumStoreContract
import Essentials
import Foundation
import HTTPTestSupport
import Library
import Postgres
import Storage
import Testing

/// Keyset pages of the value sorts read their index on PostgreSQL too (`albums_by_title` on the
/// folded `title_key`, …): an index scan from the anchor, never a sort of the library.
@Suite("PostgreSQL store: page plans")
struct PostgresPagePlanTests {
    @Test func keysetPagesOfEverySortReadTheirIndexWithoutASort() throws {
        let url = try PostgresServer.shared().makeDatabase()
        let store = try PostgresAlbumStore(pool: PostgresPool(PostgresPool.Configuration(url: url, size: 2)))
        try store.write(.default) { writer throws in
            for number in 0..<3000 {
                let millis = 1_600_000_000_000 + Int64((number * 7919) % 3000) * 1000
                try writer.insert(Album(
                    id: AlbumStoreContract.id(UInt64(number + 1)), title: "Title \((number * 31) % 997)",
                    artist: "Artist \(number % 211)", genre: Album.defaultGenre, year: 1950 + number % 70, coverUrl: nil,
                    createdAt: Timestamp.date(milliseconds: millis), updatedAt: Timestamp.date(milliseconds: millis)),
                    at: number)
            }
        }
        let analyze = try PostgresConnection(url: url)
        try analyze.execute("ANALYZE")
        let anchorID = AlbumStoreContract.id(1500)
        let cases: [(AlbumSort.Field, SortValue, String)] = [
            (.title, .text("Title 500"), "albums_by_title"),
            (.artist, .text("Artist 100"), "albums_by_artist"),
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
    }
}
