import Essentials
import Foundation
import TestThreads
import Testing
@testable import Library

/// A measurement, not an assertion: parses a generated million-album archive and prints how
/// long parse + validate took and the peak memory it needed.
///
/// Runs only with `BLUELIBRARY_PARSER_BENCH=1`, in release mode:
/// `BLUELIBRARY_PARSER_BENCH=1 swift test -c release --filter ArchiveParserBenchmark`.
/// `BLUELIBRARY_PARSER_BENCH_ALBUMS` changes the album count; `BLUELIBRARY_PARSER_BENCH_COMPARE=1`
/// also times `JSONSerialization` alone on the same bytes (the old path's first step).
@Suite("Archive parser benchmark", .ownThreads)
struct ArchiveParserBenchmark {
    static let enabled = ProcessInfo.processInfo.environment["BLUELIBRARY_PARSER_BENCH"] == "1"

    @Test("parse + validate a generated archive", .enabled(if: ArchiveParserBenchmark.enabled))
    func parseLargeArchive() throws {
        let environment = ProcessInfo.processInfo.environment
        let count = environment["BLUELIBRARY_PARSER_BENCH_ALBUMS"].flatMap { Int($0) } ?? 1_000_000
        let generationStart = Date()
        let bytes = Self.archive(albums: count)
        print("archive: \(count) albums, \(bytes.count) bytes, generated in \(Self.seconds(since: generationStart))")
        let before = Self.memory()
        Self.resetPeakMemory()

        let start = Date()
        let cpuStart = Self.threadCPUTime()
        let document = try ArchiveDocument.parse(json: bytes)
        let elapsed = Date().timeIntervalSince(start)
        let cpu = Self.threadCPUTime() - cpuStart
        let after = Self.memory()

        #expect(document.albums.count == count)
        print(String(format: "parse + validate: %.3f s wall, %.3f s CPU (%.0f albums/s, %.1f MB/s)", elapsed, cpu,
                     Double(count) / elapsed, Double(bytes.count) / elapsed / 1e6))
        print("memory: VmRSS before \(before.rss / 1024) MB; VmHWM during parse \(after.hwm / 1024) MB "
            + "(\((after.hwm - before.rss) / 1024) MB above the document); VmRSS after \(after.rss / 1024) MB")

        if environment["BLUELIBRARY_PARSER_BENCH_COMPARE"] == "1" {
            let foundationStart = Date()
            let object = try JSONSerialization.jsonObject(with: Data(bytes))
            print("JSONSerialization alone (no validation): \(Self.seconds(since: foundationStart)); "
                + "VmHWM now \(Self.memory().hwm / 1024) MB")
            withExtendedLifetime(object) {}
        }
    }

    /// An archive shaped like an export: realistic text, every field present.
    static func archive(albums count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count * 280 + 1024)
        bytes.append(contentsOf: #"{"format":"bluelibrary.archive","formatVersion":1,"exportedAt":"2024-05-01T12:00:00.000Z","library":"default","version":42,"albums":["#.utf8)
        let genres = ["Pop", "Rock", "Jazz", "Hip-Hop", "Classical", "Electronic"]
        let start: Int64 = 1_700_000_000_000
        for index in 0..<count {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "\n"))
            let created = Timestamp.date(milliseconds: start + Int64(index) * 1000)
            let album = Album(
                id: AlbumID(high: UInt64(start + Int64(index)) << 16 | UInt64(index & 0xFFFF), low: UInt64(index) &* 0x9E37_79B9_7F4A_7C15),
                title: "Greatest Hits Volume \(index)", artist: "The Band Number \(index % 5000)",
                genre: genres[index % genres.count], year: 1950 + index % 75,
                coverUrl: index % 10 == 0 ? nil : "https://s3.amazonaws.com/CoverProject/album/album_\(index).png",
                createdAt: created, updatedAt: created.addingTimeInterval(60))
            album.appendJSON(to: &bytes)
        }
        bytes.append(contentsOf: "\n],\"states\":[{\"client\":\"default\",\"currentAlbumIndex\":0,\"albumID\":null,\"updatedAt\":null}]}\n".utf8)
        return bytes
    }

    /// CPU time of the calling thread, in seconds (the wall time suffers on a busy machine).
    static func threadCPUTime() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func seconds(since start: Date) -> String {
        String(format: "%.3f s", Date().timeIntervalSince(start))
    }

    /// VmRSS and VmHWM of this process, in KiB (0 where /proc is not available).
    static func memory() -> (rss: Int, hwm: Int) {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
        func value(_ name: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
        }
        return (value("VmRSS"), value("VmHWM"))
    }

    /// Resets VmHWM to the current RSS (Linux: writing 5 to /proc/self/clear_refs).
    static func resetPeakMemory() {
        try? Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
    }
}
