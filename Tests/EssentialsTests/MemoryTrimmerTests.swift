#if canImport(Glibc)
import Glibc
#endif
import Essentials
import Foundation
import TestThreads
import Testing

@Suite(.ownThreads, .serialized) struct MemoryTrimmerTests {
    /// The resident set of this process, from /proc/self/statm.
    static func residentBytes() throws -> Int {
        let text = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8)
        let fields = text.split(separator: " ")
        return (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Freed blocks between blocks still in use stay resident in glibc's free lists (nothing is
    /// at a heap's top to give back); a check above the threshold trims them, and the resident
    /// set drops by most of what was freed.
    @Test func aCheckGivesFragmentedFreeMemoryBack() throws {
        let block = 64 << 10  // below glibc's mmap threshold: from the arena
        let count = 1024  // 64 MiB in all, half of it freed
        var blocks: [UnsafeMutableRawPointer] = []
        for _ in 0..<count {
            let pointer = try #require(malloc(block))
            memset(pointer, 0x5A, block)
            blocks.append(pointer)
        }
        defer { for (index, pointer) in blocks.enumerated() where index % 2 == 1 { free(pointer) } }
        for (index, pointer) in blocks.enumerated() where index % 2 == 0 { free(pointer) }
        let freed = count / 2 * block
        #expect(MemoryTrimmer.freeBytesHeld() >= freed / 2, "the freed blocks are held free")

        let quiet = MemoryTrimmer(threshold: Int.max)
        #expect(quiet.check() == 0 && quiet.statistics.trims == 0, "below its threshold a check does nothing")

        let before = try Self.residentBytes()
        let trimmer = MemoryTrimmer(threshold: 1 << 20)
        #expect(trimmer.check() >= freed / 2)
        #expect(trimmer.statistics.trims == 1)
        let after = try Self.residentBytes()
        #expect(before - after >= freed / 2, "resident \(before) -> \(after) bytes after trimming \(freed) freed")
    }

    @Test func theOperatorsOwnAllocatorSettingsWin() {
        #expect(MemoryTrimmer.configureAllocator(environment: ["MALLOC_MMAP_THRESHOLD_": "131072"]) == false)
        #expect(MemoryTrimmer.configureAllocator(environment: ["MALLOC_TRIM_THRESHOLD_": "1048576"]) == false)
        #expect(MemoryTrimmer.configureAllocator(environment: [:]) == true)
    }
}
