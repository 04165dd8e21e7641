import AlbumStoreContract
import Essentials
import Library

/// Album `number` of the store tests: the contract's id for it, timestamps a second apart.
func testAlbum(_ number: UInt64) -> Album {
    let millis = 1_700_000_000_000 + Int64(number) * 1_001
    return Album(
        id: AlbumStoreContract.id(number), title: "Album \(number)", artist: "Artist", genre: Album.defaultGenre,
        year: 1970, coverUrl: nil, createdAt: Timestamp.date(milliseconds: millis),
        updatedAt: Timestamp.date(milliseconds: millis))
}
