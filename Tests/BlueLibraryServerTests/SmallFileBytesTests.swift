@testable import BlueLibraryServer
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// Small cover files sent from memory: read once, whole, within bounds.
@Suite(.ownThreads) struct SmallFileBytesTests {
    @Test func aSmallFileIsReadOnceAndServedFromMemoryAfterwards() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cover-1.jpg")
        let bytes = (0..<9_276).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let memo = SmallFileBytes()
        #expect(memo.bytes(ofFile: path, length: bytes.count) == bytes)
        // The name is the content's: once read, the file is not opened again.
        try FileManager.default.removeItem(atPath: path)
        #expect(memo.bytes(ofFile: path, length: bytes.count) == bytes)
    }

    @Test func largeMissingOrMismatchedFilesAreLeftToTheDisk() throws {
        let directory = try TemporaryDirectory()
        let memo = SmallFileBytes()
        let large = directory.file("large.jpg")
        try Data(count: SmallFileBytes.maxFileBytes + 1).write(to: URL(fileURLWithPath: large))
        #expect(memo.bytes(ofFile: large, length: SmallFileBytes.maxFileBytes + 1) == nil, "larger than the bound")
        #expect(memo.bytes(ofFile: directory.file("missing.jpg"), length: 100) == nil)
        let short = directory.file("short.jpg")
        try Data(count: 50).write(to: URL(fileURLWithPath: short))
        #expect(memo.bytes(ofFile: short, length: 100) == nil, "a file of another length than the record says")
        #expect(memo.bytes(ofFile: short, length: 0) == nil)
    }

    @Test func pastItsCapacityFilesLeaveToMakeRoom() throws {
        let directory = try TemporaryDirectory()
        let memo = SmallFileBytes(capacityBytes: 2_500)
        var paths: [String] = []
        for index in 0..<3 {
            let path = directory.file("cover-\(index).jpg")
            try Data(repeating: UInt8(index), count: 1_000).write(to: URL(fileURLWithPath: path))
            paths.append(path)
            #expect(memo.bytes(ofFile: path, length: 1_000) == [UInt8](repeating: UInt8(index), count: 1_000))
        }
        // The third file did not fit with the first two: one of them left to make room, so with
        // the files removed from the disk, exactly one of the first two is gone from memory,
        // and the third is still there.
        for path in paths { try FileManager.default.removeItem(atPath: path) }
        let kept = (0..<2).filter { memo.bytes(ofFile: paths[$0], length: 1_000) != nil }
        #expect(kept.count == 1)
        #expect(memo.bytes(ofFile: paths[2], length: 1_000) == [UInt8](repeating: 2, count: 1_000))
    }
}
