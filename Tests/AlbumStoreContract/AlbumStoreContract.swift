import Essentials
import Foundation
import Library
import ServerRecords
import Testing

/// The `AlbumStore` contract (and the idempotency, settings and access stores beside it), written once
/// and run against every store: ordering rules, rollback, undo, saved states, archive-style
/// replacement, paging, the change feed, idempotency keys and the settings document.
///
/// A check states what `AlbumStoreReader`/`AlbumStoreWriter` promise, with expected values
/// worked out from the rules (an array for the order; `AlbumFilter.matches` and
/// `AlbumSort.orders` for pages), never from another store. SQLite is the reference engine:
/// where a fake disagrees, the fake is wrong.
///
/// Run it from a test target with one line per engine:
/// ```swift
/// @Test(arguments: AlbumStoreContract.checks)
/// func contract(_ check: ContractCheck) throws { try check.run(.sqlite) }
/// ```
public enum AlbumStoreContract {
    /// Every check, in a stable order.
    public static let checks: [ContractCheck] = [
        ContractCheck("a library created and never written reads as empty, at version 0", neverWritten),
        ContractCheck("inserts, moves and deletes keep the order; every read agrees with it", ordering),
        ContractCheck("a throwing write rolls everything back and rethrows the same error", rollback),
        ContractCheck("out-of-range reads are empty, never a crash; a body's error stops a stream unchanged", edges),
        ContractCheck("update replaces fields in place; integrity violations throw and change nothing", integrity),
        ContractCheck("versions count from 1 per library; libraries are independent", versionsAndLibraries),
        ContractCheck("the undo stack pushes, trims to its limit, peeks, pops newest first and clears", undoStack),
        ContractCheck("saved states are kept as given, one per client, ordered by client", savedStates),
        ContractCheck("removing every album keeps states, version and undo; appends refill the library", replaceAll),
        ContractCheck("pages follow every sort, filter and anchor as the rules describe", pages),
        ContractCheck("counts and reads inside a stretch of a value order follow the rules", ranges),
        ContractCheck("the change feed pages by version and is pruned only from its oldest end", changeFeed),
        ContractCheck("the catalog: default always exists; create, rename, delete; missing libraries throw", catalog),
        ContractCheck("a library created again starts empty and continues its versions", recreatedLibrary),
        ContractCheck("deleting a library removes everything it holds and nothing of the others", deletedLibrary),
        ContractCheck("album ids are unique across libraries; library(of:) finds them as the transaction sees it", globalIDs),
        ContractCheck("several libraries: one snapshot, one transaction, all rolled back together", severalLibraries),
        ContractCheck("the change feed keeps fromIndex and peer", changeFeedMoves),
        ContractCheck("views are stored whole, replaced by id, listed by id and deleted", viewDefinitions),
        ContractCheck("views change by compare-and-set: one create per id, one change per revision, also concurrently",
                      viewCompareAndSet),
        ContractCheck("random operations over three libraries, moves between them included, agree with arrays", randomCatalog),
        ContractCheck("idempotency keys: claim, in progress, mismatch, replay, release, expiry", idempotency),
        ContractCheck("the settings document is stored, replaced and updated in place", settings),
        ContractCheck("access records: the token hash, failed attempts per client, pruning", access),
    ]

    // MARK: - Checks

    static func neverWritten(_ factory: AlbumStoreFactory) throws {
        let stores = try factory()
        let fresh = LibraryID(rawValue: "fresh")
        _ = try stores.albums.createLibrary(fresh, name: "Fresh")
        try stores.albums.read(fresh) { reader throws in
            #expect(try reader.version() == 0)
            #expect(try reader.count() == 0)
            #expect(try reader.album(at: 0) == nil)
            #expect(try reader.albums(offset: 0, limit: 5).isEmpty)
            #expect(try reader.album(id: album(1).id) == nil)
            #expect(try reader.index(of: album(1).id) == nil)
            #expect(try reader.undoDepth() == 0)
            #expect(try reader.peekUndo() == nil)
            #expect(try reader.states().isEmpty)
            #expect(try reader.changes(after: 0, limit: 10).isEmpty)
            #expect(try reader.oldestRetainedChange() == nil)
            #expect(try reader.count(matching: AlbumFilter(text: "a")) == 0)
            #expect(try reader.albums(matching: .all, sort: .position, from: .start, limit: 5) == [])
            #expect(try reader.albums(matching: .all, sort: .position, from: .afterAlbum(album(1).id), limit: 5) == nil)
        }
    }

    static func ordering(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        var model: [Album] = []
        var next: UInt64 = 1
        // Deterministic positions that hit the front, the back and the middle, in transactions
        // of a few operations each (a store's per-transaction caches must agree too).
        for round in 0..<40 {
            try store.write(.default) { writer throws in
                for step in 0..<5 {
                    let n = round * 5 + step
                    let new = album(next)
                    next += 1
                    let index = [0, model.count, (n * 7919) % (model.count + 1)][n % 3]
                    try writer.insert(new, at: index)
                    model.insert(new, at: index)
                }
                if round % 3 == 2, !model.isEmpty {
                    let victim = model.remove(at: (round * 31) % model.count)
                    try writer.delete(id: victim.id)
                }
                if round % 4 == 1, model.count > 1 {
                    let from = (round * 13) % model.count
                    let to = (round * 17) % model.count
                    let moving = model.remove(at: from)
                    model.insert(moving, at: to)
                    try writer.move(id: moving.id, to: to)
                }
                // Reads inside the write see its own changes.
                #expect(try writer.count() == model.count)
                #expect(try writer.album(at: model.count - 1) == model.last)
            }
            try expectOrder(store, model)
        }
        // Deleting down to nothing, from both ends and the middle.
        while !model.isEmpty {
            try store.write(.default) { writer throws in
                for pick in [0, model.count - 1, model.count / 2] where !model.isEmpty {
                    let victim = model.remove(at: min(pick, model.count - 1))
                    try writer.delete(id: victim.id)
                }
            }
            try expectOrder(store, model)
        }
    }

    static func rollback(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        try store.write(.default) { writer throws in
            try writer.insert(album(1), at: 0)
            _ = try writer.bumpVersion()
        }
        struct Marker: Error, Equatable { let token: Int }
        do {
            try store.write(.default) { writer throws in
                try writer.insert(album(2), at: 0)
                try writer.update(album(1, title: "Changed"))
                _ = try writer.bumpVersion()
                try writer.pushUndo(.remove(id: album(2).id, title: "Album 2"), limit: 10)
                try writer.saveState(SavedState(client: "phone", currentAlbumIndex: 1, albumID: album(1).id, updatedAt: nil))
                try writer.recordChange(change(2, .added, album(2).id, 0))
                try writer.deleteAllAlbums()
                throw Marker(token: 42)
            }
            Issue.record("the write did not rethrow")
        } catch let error as Marker {
            #expect(error == Marker(token: 42), "the body's error comes back unchanged")
        }
        try store.read(.default) { reader throws in
            #expect(try reader.version() == 1)
            #expect(try reader.albums(offset: 0, limit: 10) == [album(1)])
            #expect(try reader.undoDepth() == 0)
            #expect(try reader.states().isEmpty)
            #expect(try reader.changes(after: 0, limit: 10).isEmpty)
        }
        // The store is still usable after the rollback.
        try store.write(.default) { writer throws in try writer.insert(album(3), at: 1) }
        try expectOrder(store, [album(1), album(3)])
    }

    static func edges(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        let model = (1...6).map { album(UInt64($0)) }
        try store.write(.default) { writer throws in
            for (index, album) in model.enumerated() { try writer.insert(album, at: index) }
            try writer.saveState(SavedState(client: "a", currentAlbumIndex: 0, albumID: nil, updatedAt: nil))
            try writer.saveState(SavedState(client: "b", currentAlbumIndex: 1, albumID: nil, updatedAt: nil))
            try writer.pushUndo(.remove(id: model[0].id, title: "x"), limit: -1)
            #expect(try writer.undoDepth() == 0, "a negative limit keeps none")
        }
        struct Stop: Error, Equatable {}
        try store.read(.default) { reader throws in
            #expect(try reader.albums(offset: -1, limit: 3).isEmpty)
            #expect(try reader.albums(offset: 2, limit: 0).isEmpty)
            #expect(try reader.albums(offset: 2, limit: -4).isEmpty)
            #expect(try reader.albums(matching: .all, sort: .position, from: .offset(-3), limit: 2) == Array(model.prefix(2)))
            #expect(try reader.albums(matching: .all, sort: AlbumSort(.title), from: .offset(-3), limit: 1)?.count == 1)
            #expect(try reader.albums(matching: .all, sort: .position, from: .start, limit: -1) == [])
            #expect(try reader.changes(after: 0, limit: -1).isEmpty)
            var seen = 0
            #expect(throws: Stop()) {
                try reader.forEachAlbum { _ in
                    seen += 1
                    if seen == 2 { throw Stop() }
                }
            }
            #expect(seen == 2, "the stream stopped at the error")
            var states = 0
            #expect(throws: Stop()) {
                try reader.forEachState { _ in
                    states += 1
                    throw Stop()
                }
            }
            #expect(states == 1)
        }
    }

    static func integrity(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        try store.write(.default) { writer throws in
            for n in 1...3 { try writer.insert(album(UInt64(n)), at: n - 1) }
        }
        var changed = album(2, title: "Renamed")
        changed.year = nil
        changed.coverUrl = nil
        changed.updatedAt = Timestamp.date(milliseconds: 1_800_000_000_123)
        try store.write(.default) { writer throws in try writer.update(changed) }
        try expectOrder(store, [album(1), changed, album(3)])

        let before = [album(1), changed, album(3)]
        for attempt in [
            { (writer: any AlbumStoreWriter) in try writer.insert(album(1), at: 0) }, // duplicate id
            { writer throws in try writer.update(album(99)) }, // unknown id
            { writer throws in try writer.delete(id: album(99).id) },
            { writer throws in try writer.move(id: album(99).id, to: 0) },
        ] {
            #expect(throws: (any Error).self) { try store.write(.default) { writer throws in try attempt(writer) } }
            try expectOrder(store, before)
        }
    }

    static func versionsAndLibraries(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        let other = LibraryID(rawValue: "other")
        _ = try store.createLibrary(other, name: "Other")
        #expect(try store.write(.default) { try $0.bumpVersion() } == 1)
        #expect(try store.write(.default) { try $0.bumpVersion() } == 2)
        #expect(try store.write(other) { try $0.bumpVersion() } == 1)
        try store.write(.default) { writer throws in
            try writer.insert(album(1), at: 0)
            try writer.saveState(SavedState(client: "a", currentAlbumIndex: 0, albumID: nil, updatedAt: nil))
            try writer.pushUndo(.remove(id: album(1).id, title: "Album 1"), limit: 5)
        }
        try store.write(other) { writer throws in try writer.insert(album(2), at: 0) }
        try store.write(other) { writer throws in try writer.deleteAllAlbums() }
        try store.read(.default) { reader throws in
            #expect(try reader.version() == 2)
            #expect(try reader.albums(offset: 0, limit: 5) == [album(1)])
            #expect(try reader.states().map(\.client) == ["a"])
            #expect(try reader.undoDepth() == 1)
        }
        try store.read(other) { reader throws in
            #expect(try reader.version() == 1)
            #expect(try reader.count() == 0)
            #expect(try reader.states().isEmpty)
            #expect(try reader.undoDepth() == 0)
        }
    }

    static func undoStack(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        let commands: [UndoCommand] = [
            .reinsert(album: album(1), index: 0), .remove(id: album(2).id, title: "Album 2"),
            .move(id: album(3).id, title: "Album 3", index: 2), .restore(album: album(4, title: "Quote \" ☃")),
        ]
        try store.write(.default) { writer throws in
            for command in commands { try writer.pushUndo(command, limit: 3) }
        }
        try store.read(.default) { reader throws in
            #expect(try reader.undoDepth() == 3, "the oldest went")
            #expect(try reader.peekUndo() == commands[3])
        }
        try store.write(.default) { writer throws in
            #expect(try writer.popUndo() == commands[3])
            #expect(try writer.popUndo() == commands[2])
            try writer.pushUndo(commands[0], limit: 3)
            #expect(try writer.peekUndo() == commands[0])
        }
        try store.write(.default) { writer throws in
            #expect(try writer.undoDepth() == 2)
            try writer.clearUndo()
            #expect(try writer.popUndo() == nil)
            try writer.pushUndo(commands[1], limit: 0)
            #expect(try writer.undoDepth() == 0, "limit 0 keeps none")
        }
    }

    static func savedStates(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        let at = Timestamp.date(milliseconds: 1_700_000_000_456)
        let states = [
            SavedState(client: "tablet", currentAlbumIndex: 7, albumID: album(7).id, updatedAt: at),
            SavedState(client: "phone", currentAlbumIndex: 99, albumID: nil, updatedAt: nil), // not clamped
            SavedState(client: "desk", currentAlbumIndex: 0, albumID: album(1).id, updatedAt: at.addingTimeInterval(1)),
        ]
        try store.write(.default) { writer throws in
            for state in states { try writer.saveState(state) }
        }
        let byClient = states.sorted { $0.client < $1.client }
        try store.read(.default) { reader throws in
            #expect(try reader.states() == byClient)
            var streamed: [SavedState] = []
            try reader.forEachState { streamed.append($0) }
            #expect(streamed == byClient)
            #expect(try reader.state(client: "phone") == states[1])
            #expect(try reader.state(client: "nobody") == nil)
        }
        let replaced = SavedState(client: "phone", currentAlbumIndex: 2, albumID: album(2).id, updatedAt: at)
        try store.write(.default) { writer throws in try writer.saveState(replaced) }
        try store.read(.default) { reader throws in
            #expect(try reader.state(client: "phone") == replaced)
            #expect(try reader.states().count == 3)
        }
        try store.write(.default) { writer throws in try writer.deleteAllStates() }
        try store.read(.default) { reader throws in #expect(try reader.states().isEmpty) }
    }

    static func replaceAll(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        try store.write(.default) { writer throws in
            for n in 1...20 { try writer.insert(album(UInt64(n)), at: 0) }
            _ = try writer.bumpVersion()
            try writer.saveState(SavedState(client: "phone", currentAlbumIndex: 3, albumID: album(3).id, updatedAt: nil))
            try writer.pushUndo(.remove(id: album(3).id, title: "Album 3"), limit: 10)
        }
        // An archive import: everything out, then appends in the archive's order, one write.
        let imported = (100..<160).map { album(UInt64($0)) }
        try store.write(.default) { writer throws in
            try writer.deleteAllAlbums()
            #expect(try writer.count() == 0)
            for (index, album) in imported.enumerated() { try writer.insert(album, at: index) }
        }
        try expectOrder(store, imported)
        try store.read(.default) { reader throws in
            #expect(try reader.version() == 1)
            #expect(try reader.states().map(\.client) == ["phone"])
            #expect(try reader.undoDepth() == 1)
        }
        // Emptied and refilled inside one write, with a throw at the end: nothing of it stays.
        #expect(throws: (any Error).self) {
            try store.write(.default) { writer throws in
                try writer.deleteAllAlbums()
                try writer.insert(album(1), at: 0)
                throw CancellationError()
            }
        }
        try expectOrder(store, imported)
    }

    static func pages(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        // Titles and artists that differ only in case, missing years, equal creation times:
        // every tie-break rule is exercised.
        let words = ["alpha", "Beta", "gamma", "ALPHA", "beta", "Delta", "echo_1", "100%", "Ålpha Straße", "Виктор Цой"]
        var library: [Album] = []
        for n in 0..<48 {
            var new = album(UInt64(1000 + n))
            new.title = "\(words[n % words.count]) \(n % 5)"
            new.artist = words[(n * 3) % words.count]
            new.genre = ["Pop", "rock", "Jazz"][n % 3]
            new.year = n % 6 == 0 ? nil : 1960 + (n * 7) % 30
            new.createdAt = Timestamp.date(milliseconds: 1_700_000_000_000 + Int64(n / 3) * 1000)
            library.insert(new, at: (n * 5) % (library.count + 1))
        }
        try store.write(.default) { writer throws in
            for (index, album) in library.enumerated() { try writer.insert(album, at: index) }
        }
        let filters = [
            AlbumFilter.all, AlbumFilter(text: "ALP"), AlbumFilter(text: "_"), AlbumFilter(text: "%"),
            AlbumFilter(artist: "beta"), AlbumFilter(genre: "ROCK"), AlbumFilter(yearFrom: 1970, yearTo: 1980),
            AlbumFilter(text: "a", genre: "pop", yearFrom: 1965),
            // Searches: folded words in any field and order, the last a prefix.
            AlbumFilter(text: "alpha str"), AlbumFilter(text: "STRASSE alpha"), AlbumFilter(text: "виктор ц"),
            AlbumFilter(text: "beta 3"), AlbumFilter(text: "jazz echo"), AlbumFilter(text: "lph"),
            // Phrases: whole words one after another, in order; the last word whole after a quote.
            AlbumFilter(text: #""alpha strasse""#), AlbumFilter(text: #""ALPHA STRASSE" 3"#), AlbumFilter(text: #""straße alpha""#),
            AlbumFilter(text: #"alpha "str"#),
        ]
        try store.read(.default) { reader throws in
            for field in AlbumSort.Field.allCases {
                for descending in [false, true] {
                    let sort = AlbumSort(field, descending: descending)
                    for filter in filters {
                        try expectPages(reader, library, sort, filter)
                    }
                }
            }
            for filter in filters {
                #expect(try reader.count(matching: filter) == library.filter(filter.matches).count, "\(filter)")
            }
        }
        // The searches above find something (and a piece inside a word is no word's start).
        for text in ["alpha str", "STRASSE alpha", "виктор ц", "beta 3", "jazz echo"] {
            #expect(!library.filter(AlbumFilter(text: text).matches).isEmpty, "the search \(text) finds something")
        }
        #expect(library.filter(AlbumFilter(text: "lph").matches).isEmpty)
        #expect(!library.filter(AlbumFilter(text: #""alpha strasse" 3"#).matches).isEmpty)
        #expect(library.filter(AlbumFilter(text: #""straße alpha""#).matches).isEmpty, "a phrase is in order")
        #expect(library.filter(AlbumFilter(text: #"alpha "str"#).matches).isEmpty, "a quoted word is whole")
    }

    static func changeFeed(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        let kinds: [LibraryChange.Kind] = [.added, .updated, .moved, .deleted, .replaced, .added]
        let recorded = kinds.enumerated().map { offset, kind in
            change(Int64(offset + 1), kind, kind == .replaced ? nil : album(UInt64(offset)).id, kind == .replaced ? nil : offset)
        }
        try store.write(.default) { writer throws in
            for change in recorded { try writer.recordChange(change) }
        }
        try store.read(.default) { reader throws in
            #expect(try reader.changes(after: 0, limit: 100) == recorded)
            #expect(try reader.changes(after: 2, limit: 2) == Array(recorded[2..<4]))
            #expect(try reader.changes(after: 6, limit: 10).isEmpty)
            #expect(try reader.changes(after: 0, limit: 0).isEmpty)
            #expect(try reader.oldestRetainedChange() == recorded[0])
        }
        // Pruning: recorded 1 s apart from version 1; versions 1...3 are old enough.
        let cutoff = recorded[3].recordedAt
        try store.write(.default) { writer throws in
            try writer.pruneChanges(throughVersion: 2, recordedBefore: cutoff, limit: 100)
        }
        try store.read(.default) { reader throws in
            #expect(try reader.oldestRetainedChange()?.version == 3, "only what both conditions allow")
        }
        try store.write(.default) { writer throws in
            try writer.pruneChanges(throughVersion: 100, recordedBefore: cutoff, limit: 100)
        }
        try store.read(.default) { reader throws in
            #expect(try reader.oldestRetainedChange()?.version == 4, "stops at the first change to keep")
        }
        try store.write(.default) { writer throws in
            try writer.pruneChanges(throughVersion: 100, recordedBefore: recorded[5].recordedAt.addingTimeInterval(1), limit: 1)
            try writer.pruneChanges(throughVersion: 100, recordedBefore: recorded[5].recordedAt.addingTimeInterval(1), limit: 0)
        }
        try store.read(.default) { reader throws in
            #expect(try reader.changes(after: 0, limit: 100) == Array(recorded[4...]), "at most `limit` go")
        }
    }

    static func idempotency(_ factory: AlbumStoreFactory) throws {
        let stores = try factory()
        let keys = stores.idempotency
        let now = Timestamp.date(milliseconds: 1_700_000_000_000)
        let response = IdempotentResponse(status: 201, headers: [["Location", "/albums/1"], ["ETag", "\"7\""]], body: Array("{}".utf8))
        #expect(try keys.lookup(key: "k1", fingerprint: "f1", now: now, expiry: 60) == nil)
        #expect(try claim(stores, "k1", "f1", now: now))
        #expect(try keys.lookup(key: "k1", fingerprint: "f1", now: now, expiry: 60) == .inProgress)
        #expect(try keys.lookup(key: "k1", fingerprint: "other", now: now, expiry: 60) == .mismatch)
        #expect(try !claim(stores, "k1", "f1", now: now), "a live key is taken")
        try keys.complete(key: "k1", response: response)
        #expect(try keys.lookup(key: "k1", fingerprint: "f1", now: now.addingTimeInterval(59), expiry: 60) == .replay(response))
        // A write that fails claims nothing: the key stays free for a retry.
        let failed = IdempotencyKeyClaim(key: "k2", fingerprint: "f2", now: now, expiry: 60)
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try IdempotencyKeyClaim.$current.withValue(failed) { try stores.albums.write(.default) { _ throws in throw Refused() } }
        }
        #expect(!failed.isCommitted)
        #expect(try keys.lookup(key: "k2", fingerprint: "f2", now: now, expiry: 60) == nil)
        #expect(try claim(stores, "k2", "f3", now: now))
        // An expired key counts as unknown, and may be claimed again.
        #expect(try keys.lookup(key: "k1", fingerprint: "f9", now: now.addingTimeInterval(61), expiry: 60) == nil)
        #expect(try claim(stores, "k1", "f9", now: now.addingTimeInterval(61)))
        let empty = IdempotentResponse(status: 204, headers: [], body: [])
        try keys.complete(key: "k1", response: empty)
        #expect(try keys.lookup(key: "k1", fingerprint: "f9", now: now.addingTimeInterval(61), expiry: 60) == .replay(empty))
        // More expired keys than one claim purges: the one asked for is unknown all the same
        // (taken over, not a mismatch or a replay of an answer that has expired).
        for index in 0..<150 {
            #expect(try claim(stores, "old-\(1000 + index)", "f", now: now))
            try keys.complete(key: "old-\(1000 + index)", response: response)
        }
        let later = now.addingTimeInterval(120)
        #expect(try claim(stores, "old-1149", "new", now: later))
        #expect(try keys.lookup(key: "old-1149", fingerprint: "new", now: later, expiry: 60) == .inProgress)
        #expect(try claim(stores, "old-1148", "f", now: later))
    }

    /// Claims `key` as a request does: with a write of the store (one that changes nothing).
    /// False when the key is taken (the write rolled back).
    static func claim(_ stores: StoreUnderTest, _ key: String, _ fingerprint: String, now: Date) throws -> Bool {
        let claim = IdempotencyKeyClaim(key: key, fingerprint: fingerprint, now: now, expiry: 60)
        do {
            try IdempotencyKeyClaim.$current.withValue(claim) { try stores.albums.write(.default) { _ throws in } }
        } catch is IdempotencyKeyTaken {
            #expect(!claim.isCommitted)
            return false
        }
        #expect(claim.isCommitted)
        return true
    }

    static func settings(_ factory: AlbumStoreFactory) throws {
        let settings = try factory().settings
        #expect(try settings.loadSettings() == nil)
        try settings.saveSettings(Array(#"{"schemaVersion":2}"#.utf8))
        #expect(try settings.loadSettings() == Array(#"{"schemaVersion":2}"#.utf8))
        try settings.updateSettings { stored in
            #expect(stored == Array(#"{"schemaVersion":2}"#.utf8))
            return Array(#"{"schemaVersion":2,"x":"☃"}"#.utf8)
        }
        try settings.updateSettings { _ in nil }
        #expect(try settings.loadSettings() == Array(#"{"schemaVersion":2,"x":"☃"}"#.utf8))
    }

    static func access(_ factory: AlbumStoreFactory) throws {
        let access = try factory().access
        let start = Timestamp.date(milliseconds: 1_700_000_000_000)
        let hash = TokenHash(salt: [1, 2, 3], hash: Array(repeating: 7, count: 32), iterations: 1000)
        #expect(try access.tokenHash() == nil)
        try access.setTokenHash(hash)
        #expect(try access.tokenHash() == hash)

        let locked = FailedAttempts(count: 5, windowStart: start, lockedUntil: start.addingTimeInterval(60))
        var seen: FailedAttempts?? = .none
        let written = try access.updateFailedAttempts(client: "10.0.0.1") { old in
            seen = .some(old)
            return locked
        }
        #expect(seen == .some(nil), "the body sees the stored record (none yet)")
        #expect(written == locked)
        try access.updateFailedAttempts(client: "10.0.0.2") { _ in FailedAttempts(count: 1, windowStart: start.addingTimeInterval(30)) }
        try access.updateFailedAttempts(client: "10.0.0.3") { _ in FailedAttempts(count: 2, windowStart: start.addingTimeInterval(50)) }
        #expect(try access.failedAttempts(client: "10.0.0.1") == locked)
        #expect(try access.allFailedAttempts().keys.sorted() == ["10.0.0.1", "10.0.0.2", "10.0.0.3"])
        try access.updateFailedAttempts(client: "10.0.0.3") { _ in nil }
        #expect(try access.failedAttempts(client: "10.0.0.3") == nil)

        // At start + 90 s with a 60 s window: .2's window (from +30 s) ended, .1's lock (to +60 s) too.
        try access.updateFailedAttempts(client: "10.0.0.4") { _ in FailedAttempts(count: 1, windowStart: start.addingTimeInterval(80)) }
        try access.updateFailedAttempts(client: "10.0.0.5") { _ in FailedAttempts(count: 1, windowStart: start.addingTimeInterval(85)) }
        try access.pruneFailedAttempts(now: start.addingTimeInterval(90), interval: 60, keeping: 100)
        #expect(try access.allFailedAttempts().keys.sorted() == ["10.0.0.4", "10.0.0.5"])
        try access.pruneFailedAttempts(now: start.addingTimeInterval(90), interval: 60, keeping: 1)
        #expect(try access.allFailedAttempts().keys.sorted() == ["10.0.0.5"], "the newest windows are kept")

        // A new token (or none) clears every failure record.
        try access.setTokenHash(nil)
        #expect(try access.tokenHash() == nil)
        #expect(try access.allFailedAttempts().isEmpty)
    }

    // MARK: - Expectations

    /// Every positional read of `library` in `store` agrees with `model`.
    static func expectOrder(_ store: any AlbumStore, in library: LibraryID = .default, _ model: [Album],
                            sourceLocation: SourceLocation = #_sourceLocation) throws {
        try store.read(library) { reader throws in
            #expect(try reader.count() == model.count, sourceLocation: sourceLocation)
            var streamed: [Album] = []
            try reader.forEachAlbum { streamed.append($0) }
            #expect(streamed == model, sourceLocation: sourceLocation)
            #expect(try reader.albums(offset: 0, limit: model.count + 1) == model, sourceLocation: sourceLocation)
            for offset in stride(from: 0, to: model.count, by: 7) {
                #expect(try reader.albums(offset: offset, limit: 9) == Array(model[offset..<min(offset + 9, model.count)]),
                        sourceLocation: sourceLocation)
            }
            #expect(try reader.albums(offset: model.count, limit: 3).isEmpty, sourceLocation: sourceLocation)
            #expect(try reader.album(at: model.count) == nil, sourceLocation: sourceLocation)
            #expect(try reader.album(at: -1) == nil, sourceLocation: sourceLocation)
            for (index, album) in model.enumerated() where index % 5 == 0 || index == model.count - 1 {
                #expect(try reader.album(at: index) == album, sourceLocation: sourceLocation)
                #expect(try reader.index(of: album.id) == index, sourceLocation: sourceLocation)
                #expect(try reader.album(id: album.id) == album, sourceLocation: sourceLocation)
            }
        }
    }

    /// Pages of `sort`/`filter` from every kind of anchor match the rules: the matching albums
    /// in sort order (list order for `.position`, reversed when descending), after the anchor.
    static func expectPages(_ reader: any AlbumStoreReader, _ library: [Album], _ sort: AlbumSort, _ filter: AlbumFilter) throws {
        let context = "\(sort) \(filter)"
        var expected = library.filter(filter.matches)
        if sort.field == .position {
            if sort.descending { expected.reverse() }
        } else {
            expected.sort { sort.orders($0, before: $1) }
        }
        for limit in [0, 1, 5, 100] {
            #expect(try reader.albums(matching: filter, sort: sort, from: .start, limit: limit) == Array(expected.prefix(limit)), "\(context)")
        }
        for offset in [0, 3, expected.count - 1, expected.count, expected.count + 5] where offset >= 0 {
            #expect(try reader.albums(matching: filter, sort: sort, from: .offset(offset), limit: 4)
                    == Array(expected.dropFirst(offset).prefix(4)), "\(context) offset \(offset)")
        }
        // After an album (matching the filter or not), and after its sort value.
        for (position, anchor) in library.enumerated() where position % 4 == 1 {
            let after: [Album]
            if sort.field == .position {
                let rest = sort.descending ? Array(library[..<position].reversed()) : Array(library[(position + 1)...])
                after = rest.filter(filter.matches)
            } else {
                after = expected.filter { sort.orders(anchor, before: $0) }
            }
            #expect(try reader.albums(matching: filter, sort: sort, from: .afterAlbum(anchor.id), limit: 6)
                    == Array(after.prefix(6)), "\(context) after \(anchor.title)")
            if let value = SortValue.of(anchor, for: sort.field, articles: .standard) {
                #expect(try reader.albums(matching: filter, sort: sort, from: .afterValue(value, anchor.id), limit: 6)
                        == Array(after.prefix(6)), "\(context) after value of \(anchor.title)")
            }
        }
        #expect(try reader.albums(matching: filter, sort: sort, from: .afterAlbum(album(9999).id), limit: 3) == nil, "\(context)")
    }

    // MARK: - Values

    private static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// A valid album id whose text encodes `number` (ids sort like the numbers).
    public static func id(_ number: UInt64) -> AlbumID {
        var symbols = [UInt8](repeating: UInt8(ascii: "0"), count: AlbumID.length)
        var rest = number
        var position = AlbumID.length - 1
        while rest > 0 {
            symbols[position] = alphabet[Int(rest & 31)]
            rest >>= 5
            position -= 1
        }
        return AlbumID(String(decoding: symbols, as: UTF8.self))!
    }

    /// Album `number`, with whole-millisecond dates (what every store keeps exactly).
    static func album(_ number: UInt64, title: String? = nil) -> Album {
        let millis = 1_700_000_000_000 + Int64(number) * 1_001
        return Album(
            id: id(number), title: title ?? "Album \(number)", artist: "Artist \(number % 7)",
            genre: number % 3 == 0 ? "Rock" : Album.defaultGenre, year: number % 5 == 0 ? nil : 1950 + Int(number % 70),
            coverUrl: number % 4 == 0 ? nil : "https://covers.example.com/\(number).png",
            createdAt: Timestamp.date(milliseconds: millis), updatedAt: Timestamp.date(milliseconds: millis + 7))
    }

    /// A change recorded `version` seconds after a fixed start.
    static func change(_ version: Int64, _ kind: LibraryChange.Kind, _ id: AlbumID?, _ index: Int?) -> LibraryChange {
        LibraryChange(version: version, kind: kind, id: id, index: index,
                      recordedAt: Timestamp.date(milliseconds: 1_700_000_000_000 + version * 1000))
    }
}
