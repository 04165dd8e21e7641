import Essentials
import Foundation
import HTTPTestSupport
import Library
import ServerRecords
import SQLite
import Storage
import Testing

/// A SQLite store holding some of everything a migration copies: four libraries (one renamed,
/// one deleted), albums inserted at scattered indexes, moved and deleted over several small
/// buckets, undo stacks, saved states, change feeds, a view, settings, the token hash, failed
/// attempts, an answered idempotency key and the cursor secret.
enum SourceFixture {
    static let settings = Array(#"{"schemaVersion":2,"x":"☃"}"#.utf8)
    static let token = TokenHash(salt: [1, 2, 3], hash: Array(repeating: 7, count: 32), iterations: 1000)
    static let start = Timestamp.date(milliseconds: 1_700_000_000_000)
    static let failures = [
        "10.0.0.1": FailedAttempts(count: 5, windowStart: start, lockedUntil: start.addingTimeInterval(60)),
        "10.0.0.2": FailedAttempts(count: 1, windowStart: start.addingTimeInterval(3)),
    ]
    static let cursorKey: [UInt8] = (0..<32).map { UInt8($0 * 7 % 256) }
    static let claimedAt = Date()
    static let answer = IdempotentResponse(status: 201, headers: [["Location", "/albums/1"]], body: Array(#"{"id":1}"#.utf8))

    /// One library as the SQLite store reads it.
    struct Library {
        var name: String
        var deleted: Bool
        var version: Int64
        var albums: [Album]
    }

    static func album(_ number: Int, title: String? = nil) -> Album {
        let millis = 1_700_000_000_000 + Int64(number) * 1_001
        let symbols = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
        var text = ""
        var rest = number
        for _ in 0..<26 {
            text.insert(symbols[rest % 32], at: text.startIndex)
            rest /= 32
        }
        return Album(
            id: AlbumID(text)!, title: title ?? "Album \(number)", artist: number % 2 == 0 ? "Ärtist \(number % 7)" : "artist",
            genre: number % 3 == 0 ? "Rock" : Album.defaultGenre, year: number % 5 == 0 ? nil : 1950 + number % 70,
            coverUrl: number % 4 == 0 ? nil : "https://covers.example.com/\(number).png",
            createdAt: Timestamp.date(milliseconds: millis), updatedAt: Timestamp.date(milliseconds: millis + 7))
    }

    @discardableResult
    static func make(at path: String) throws -> SQLiteAlbumStore {
        let store = try SQLiteAlbumStore(path: path, configuration: SQLiteAlbumStore.Configuration(bucketSize: 4))
        _ = try store.createLibrary(LibraryID(rawValue: "jazz"), name: "Jazz & Blues")
        _ = try store.createLibrary(LibraryID(rawValue: "rock"), name: "Rock")
        _ = try store.renameLibrary(LibraryID(rawValue: "rock"), name: "Rock ’n’ Roll")
        _ = try store.createLibrary(LibraryID(rawValue: "gone"), name: "Gone")
        var generator = SeededGenerator(seed: 14)
        var number = 0
        for (library, count) in [("default", 40), ("jazz", 17), ("rock", 9), ("gone", 5)] {
            try store.write(LibraryID(rawValue: library)) { writer in
                var size = 0
                for _ in 0..<count {
                    number += 1
                    let index = Int(generator.next() % UInt64(size + 1))
                    let album = album(number, title: number % 6 == 0 ? "the \(number)" : nil)
                    try writer.insert(album, at: index)
                    size += 1
                    try record(writer, .added, album.id, index)
                    try writer.pushUndo(.remove(id: album.id, title: album.title), limit: 10)
                }
                for _ in 0..<count / 3 {
                    // Moves and deletes read their target from the writer's own order.
                    let from = Int(generator.next() % UInt64(size))
                    let to = Int(generator.next() % UInt64(size))
                    guard let moving = try writer.album(at: from) else { continue }
                    try writer.move(id: moving.id, to: to)
                    try record(writer, .moved, moving.id, to, from: from)
                    try writer.pushUndo(.move(id: moving.id, title: moving.title, index: from), limit: 10)
                }
                if let doomed = try writer.album(at: size / 2) {
                    try writer.delete(id: doomed.id)
                    try record(writer, .deleted, doomed.id, size / 2)
                    try writer.pushUndo(.reinsert(album: doomed, index: size / 2), limit: 10)
                }
                try writer.saveState(SavedState(client: "phone", currentAlbumIndex: 2, albumID: try writer.album(at: 2)?.id, updatedAt: start))
                try writer.saveState(SavedState(client: "tv", currentAlbumIndex: 0, albumID: nil, updatedAt: nil))
            }
        }
        try store.deleteLibrary(LibraryID(rawValue: "gone"), onlyIfEmpty: false)
        try store.saveView(ViewDefinition(
            id: ViewID(rawValue: "mix"), name: "Mix", sources: [.default, LibraryID(rawValue: "jazz")],
            filter: AlbumFilter(text: "album", artist: "artist", yearFrom: 1960, yearTo: 2000), revision: 3))
        try store.saveSettings(settings)
        try store.setTokenHash(token)
        for (client, record) in failures {
            try store.updateFailedAttempts(client: client) { _ in record }
        }
        // Keys are claimed by writes, as requests claim them.
        for (key, fingerprint) in [("answered", "f"), ("pending", "g")] {
            let claim = IdempotencyKeyClaim(key: key, fingerprint: fingerprint, now: claimedAt, expiry: 60)
            try IdempotencyKeyClaim.$current.withValue(claim) { try store.write(.default) { _ throws in } }
            #expect(claim.isCommitted)
        }
        try store.complete(key: "answered", response: answer)
        #expect(try store.secret(named: "cursor", orStore: cursorKey) == cursorKey)
        return store
    }

    /// Every library (live or deleted) with its albums in order, through the store's own reads.
    static func libraries(of store: SQLiteAlbumStore) throws -> [Library] {
        var all: [Library] = []
        for name in ["default", "gone", "jazz", "rock"] {
            let id = LibraryID(rawValue: name)
            if name == "gone" {
                let sqlite = try Connection(path: store.path, mode: .readOnly)
                let version = try sqlite.scalar("SELECT version FROM libraries WHERE name = ?1", [.text(name)], as: Int64.self)
                all.append(Library(name: name, deleted: true, version: version ?? -1, albums: []))
                continue
            }
            try store.read(id) { reader in
                var albums: [Album] = []
                try reader.forEachAlbum { albums.append($0) }
                all.append(Library(name: name, deleted: false, version: try reader.version(), albums: albums))
            }
        }
        return all
    }

    private static func record(_ writer: any AlbumStoreWriter, _ kind: LibraryChange.Kind, _ id: AlbumID, _ index: Int, from: Int? = nil) throws {
        let version = try writer.bumpVersion()
        try writer.recordChange(LibraryChange(
            version: version, kind: kind, id: id, index: index, fromIndex: from,
            recordedAt: start.addingTimeInterval(Double(version))))
    }
}
