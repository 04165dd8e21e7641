import Essentials
import Foundation
import Library
import Testing

extension AlbumStoreContract {
    /// `count(matching:sort:in:limit:)` and `albums(matching:sort:in:skipping:limit:)`: the
    /// matching albums strictly between the range's keys, in sort order, as `AlbumSort.orders`
    /// and `AlbumFilter.matches` describe, for keys of albums in the library, keys of albums
    /// elsewhere (the same value with another id), both directions and every value sort.
    static func ranges(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        let titles = ["alpha", "Alpha", "ALPHA", "Émile", "émile", "Zoë", "zoe", "日本", "b_%", "beta"]
        var library: [Album] = []
        for n in 0..<36 {
            var new = album(UInt64(2000 + (n * 17) % 36))
            new.title = titles[(n * 7) % titles.count]
            new.artist = ["Ann", "ann", "Bob", "Ødegaard"][n % 4]
            new.genre = ["Pop", "rock", "Électro", "ROCK", "jazz"][n % 5]
            new.year = n % 3 == 0 ? nil : [1960, 1971, 1985][n % 3]
            new.createdAt = Timestamp.date(milliseconds: 1_700_000_000_000 + Int64(n % 5) * 1000)
            library.append(new)
        }
        try store.write(.default) { writer throws in
            for (index, album) in library.enumerated() { try writer.insert(album, at: index) }
        }
        let filters = [AlbumFilter.all, AlbumFilter(text: "A"), AlbumFilter(genre: "ROCK", yearFrom: 1965), AlbumFilter(artist: "ann")]
        // Keys of albums in the library, and of albums not in it (equal values, ids before and after).
        var keyAlbums = library.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
        for (n, title) in ["alpha", "zoe", "日本"].enumerated() {
            var outside = album(UInt64(n == 1 ? 1 : 9000 + n), title: title)
            outside.year = 1971
            keyAlbums.append(outside)
        }
        try store.read(.default) { reader throws in
            for field in AlbumSort.Field.allCases where field != .position {
                for descending in [false, true] {
                    let sort = AlbumSort(field, descending: descending)
                    for filter in filters {
                        let expected = library.filter(filter.matches).sorted { sort.orders($0, before: $1) }
                        let context = "\(sort) \(filter)"
                        #expect(try reader.count(matching: filter, sort: sort, in: .all, limit: 1000) == expected.count, "\(context)")
                        #expect(try reader.count(matching: filter, sort: sort, in: .all, limit: 3) == min(3, expected.count), "\(context)")
                        #expect(try reader.count(matching: filter, sort: sort, in: .all, limit: 0) == 0, "\(context)")
                        #expect(try reader.albums(matching: filter, sort: sort, in: .all, skipping: 2, limit: 5)
                                == Array(expected.dropFirst(2).prefix(5)), "\(context)")
                        for (index, low) in keyAlbums.enumerated() {
                            let lowKey = try #require(SortKey.of(low, for: field, articles: .standard))
                            let high = keyAlbums[(index * 5 + 3) % keyAlbums.count]
                            let highKey = try #require(SortKey.of(high, for: field, articles: .standard))
                            let after = expected.filter { sort.orders(low, before: $0) }
                            let before = expected.filter { sort.orders($0, before: high) }
                            let between = after.filter { sort.orders($0, before: high) }
                            let ranges: [(SortRange, [Album])] = [
                                (SortRange(after: lowKey), after), (SortRange(before: highKey), before),
                                (SortRange(after: lowKey, before: highKey), between),
                            ]
                            for (range, inside) in ranges {
                                let label = "\(context) after \(low.title)/\(low.id) before \(high.title)/\(high.id) \(range)"
                                #expect(try reader.count(matching: filter, sort: sort, in: range, limit: 1000) == inside.count, "\(label)")
                                #expect(try reader.count(matching: filter, sort: sort, in: range, limit: 2) == min(2, inside.count), "\(label)")
                                for skipping in [0, 1, inside.count / 2, inside.count - 1, inside.count, inside.count + 3] where skipping >= 0 {
                                    #expect(try reader.albums(matching: filter, sort: sort, in: range, skipping: skipping, limit: 3)
                                            == Array(inside.dropFirst(skipping).prefix(3)), "\(label) skipping \(skipping)")
                                }
                                #expect(try reader.albums(matching: filter, sort: sort, in: range, skipping: 0, limit: 0) == [], "\(label)")
                            }
                        }
                    }
                }
            }
        }
    }
}
