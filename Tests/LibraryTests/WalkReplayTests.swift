import Foundation
import TestThreads
import Testing
@testable import Library

/// The boundary replay of exact walks, change by change (no store).
@Suite(.ownThreads) struct WalkReplayTests {
    static func id(_ n: Int) -> AlbumID {
        AlbumID(String(format: "01ARZ3NDEKTSV4RRFFQ69G5F%02d", n))!
    }

    static let at = Date(timeIntervalSince1970: 0)

    static func added(_ n: Int, at index: Int, peer: LibraryID? = nil) -> LibraryChange {
        LibraryChange(version: 0, kind: .added, id: id(n), index: index, peer: peer, recordedAt: at)
    }
    static func deleted(_ n: Int, at index: Int, peer: LibraryID? = nil) -> LibraryChange {
        LibraryChange(version: 0, kind: .deleted, id: id(n), index: index, peer: peer, recordedAt: at)
    }
    static func moved(_ n: Int, from: Int, to: Int) -> LibraryChange {
        LibraryChange(version: 0, kind: .moved, id: id(n), index: to, fromIndex: from, recordedAt: at)
    }
    static func updated(_ n: Int, at index: Int) -> LibraryChange {
        LibraryChange(version: 0, kind: .updated, id: id(n), index: index, recordedAt: at)
    }

    func replay(_ mark: WalkMark, _ sources: [(changes: [LibraryChange], count: Int)], reversed: Bool = false) throws
        -> WalkReplay
    {
        var replay = WalkReplay(mark)
        for (source, entry) in sources.enumerated() {
            try replay.replay(walkSource: source, changes: entry.changes, countNow: entry.count, reversed: reversed)
        }
        return replay
    }

    @Test func insertsAndDeletesBeforeTheBoundaryMoveItAndAtTheBoundaryDoNot() throws {
        let changes = [Self.added(1, at: 2), Self.added(2, at: 6), Self.deleted(3, at: 0), Self.deleted(4, at: 7)]
        let result = try replay(WalkMark(versions: [0], source: 0, boundary: 5), [(changes, 10)])
        #expect(result.boundary == 5)  // +1 (insert at 2), +0 (insert at 6 = boundary), -1 (delete at 0), +0
        #expect(try result.exceptionsNow().isEmpty, "new albums land on a side; deleted ones are gone")
    }

    @Test func aMoveAcrossTheBoundaryMakesAnException() throws {
        let mark = WalkMark(versions: [0], source: 0, boundary: 5)
        let forward = try replay(mark, [([Self.moved(1, from: 1, to: 8)], 10)])
        #expect(forward.boundary == 4)
        #expect(try forward.exceptionsNow() == [WalkException(id: Self.id(1), seen: true, source: 0)], "seen, now ahead: skip it")
        let backward = try replay(mark, [([Self.moved(2, from: 7, to: 0)], 10)])
        #expect(backward.boundary == 6)
        #expect(try backward.exceptionsNow() == [WalkException(id: Self.id(2), seen: false, source: 0)], "not seen, now behind: show it")
        let behind = try replay(mark, [([Self.moved(3, from: 4, to: 0)], 10)])
        #expect(behind.boundary == 5)
        #expect(try behind.exceptionsNow().isEmpty)
        let ahead = try replay(mark, [([Self.moved(3, from: 5, to: 9), Self.updated(3, at: 9)], 10)])
        #expect(ahead.boundary == 5)
        #expect(try ahead.exceptionsNow().isEmpty)
    }

    @Test func movesBetweenSourcesUseTheSourceOrder() throws {
        let jazz = LibraryID(rawValue: "jazz")
        // The walk is in source 1; source 0 is behind, source 2 ahead.
        let mark = WalkMark(versions: [0, 0, 0], source: 1, boundary: 2)
        let result = try replay(mark, [
            ([Self.deleted(1, at: 3, peer: jazz), Self.added(2, at: 0, peer: jazz)], 4),
            ([Self.added(3, at: 0)], 5),
            ([Self.added(1, at: 0, peer: jazz), Self.deleted(2, at: 5, peer: jazz)], 6),
        ])
        #expect(result.boundary == 3, "the insert at 0 in the current source")
        #expect(try result.exceptionsNow() == [
            WalkException(id: Self.id(2), seen: false, source: 0),  // from ahead to behind
            WalkException(id: Self.id(1), seen: true, source: 2),  // from behind to ahead
        ])
    }

    @Test func anAlbumMovedInFromOutsideTheListIsNewAndAnExceptionKeepsItsFlag() throws {
        let outside = LibraryID(rawValue: "outside")
        let mark = WalkMark(versions: [0, 0], source: 1, boundary: 0, exceptions: [
            WalkException(id: Self.id(7), seen: true, source: 1),  // untouched: kept
            WalkException(id: Self.id(8), seen: true, source: 1),  // moves behind: no longer an exception
        ])
        let result = try replay(mark, [
            ([Self.added(5, at: 0, peer: outside), Self.added(8, at: 1, peer: nil)], 2),
            ([Self.deleted(8, at: 4)], 9),
        ])
        #expect(try result.exceptionsNow() == [WalkException(id: Self.id(7), seen: true, source: 1)])
    }

    @Test func descendingWalksReplayInReversedCoordinates() throws {
        // 10 albums now; the walk (last to first) has passed 3 of them (original 9, 8, 7).
        let mark = WalkMark(versions: [0], source: 0, boundary: 3)
        // The list had 9 albums: an insert at original index 9 (the end) is at walk index 0.
        let appended = try replay(mark, [([Self.added(1, at: 9)], 10)], reversed: true)
        #expect(appended.boundary == 4)
        // 10 albums before and after: original 0 (walk 9, ahead) moved to original 9 (walk 0, behind).
        let moved = try replay(mark, [([Self.moved(2, from: 0, to: 9)], 10)], reversed: true)
        #expect(moved.boundary == 4)
        #expect(try moved.exceptionsNow() == [WalkException(id: Self.id(2), seen: false, source: 0)])
    }

    @Test func theAlbumBeforeTheBoundaryStaysThereUntilItIsDeletedOrMoved() throws {
        let mark = WalkMark(versions: [0], source: 0, boundary: 3, anchor: Self.id(9))
        // Inserts before it and at the boundary, deletes of others, an edit of it: it stays.
        let kept = try replay(mark, [([Self.added(1, at: 2), Self.added(2, at: 4), Self.deleted(3, at: 0), Self.updated(9, at: 2)], 9)])
        #expect(kept.anchor == Self.id(9) && kept.boundary == 3)
        let moved = try replay(mark, [([Self.moved(9, from: 2, to: 0)], 9)])
        #expect(moved.anchor == nil && moved.boundary == 3)
        let deleted = try replay(mark, [([Self.deleted(9, at: 2)], 8)])
        #expect(deleted.anchor == nil && deleted.boundary == 2)
        let otherSource = try replay(WalkMark(versions: [0, 0], source: 1, boundary: 1, anchor: Self.id(9)),
                                     [([Self.deleted(9, at: 0)], 0), ([], 1)])
        #expect(otherSource.anchor == Self.id(9), "only changes in the current source count")
    }

    @Test func whatCannotBeReplayedExpiresTheWalk() throws {
        let mark = WalkMark(versions: [0], source: 0, boundary: 1)
        let replaced = LibraryChange(version: 0, kind: .replaced, id: nil, index: nil, recordedAt: Self.at)
        #expect(throws: LibraryError.self) { try replay(mark, [([replaced], 3)]) }
        let oldMove = LibraryChange(version: 0, kind: .moved, id: Self.id(1), index: 0, recordedAt: Self.at)
        #expect(throws: LibraryError.self) { try replay(mark, [([oldMove], 3)]) }
    }

    @Test func tooManyExceptionsExpireTheWalk() throws {
        let count = WalkMark.maxExceptions + 1
        let mark = WalkMark(versions: [0], source: 0, boundary: 1)
        // Albums move from the end (ahead) to the front (behind): none was seen.
        let changes = (0..<count).map { Self.moved($0, from: count, to: 0) }
        let result = try replay(mark, [(changes, count + 1)])
        #expect(result.boundary == count + 1)
        #expect(throws: LibraryError.self) { try result.exceptionsNow() }
        let fewer = try replay(mark, [(Array(changes.prefix(count - 1)), count + 1)])
        #expect(try fewer.exceptionsNow().count == count - 1)
    }
}
