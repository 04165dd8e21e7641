import Foundation
import Gzip
import HTTPTestSupport
import TestThreads
import Testing

/// What `Gzip.compress` makes is a gzip file the `gzip` command decodes to the input, for
/// empty, small, repetitive and incompressible inputs, at every level.
@Suite("gzip", .ownThreads)
struct GzipTests {
    static func gunzip(_ bytes: [UInt8]) throws -> (status: Int32, output: [UInt8]) {
        let outcome = try ChildProcess.run("/usr/bin/env", ["gzip", "-dc"], environment: ProcessInfo.processInfo.environment, input: bytes)
        return (outcome.status, outcome.stdout)
    }

    @Test(arguments: [0, 1, 100, 70_000, 1_000_000])
    func theGzipCommandDecodesWhatItMakes(_ size: Int) throws {
        var random = SystemRandomNumberGenerator()
        let text = Array(String(repeating: "Kind of Blue, Miles Davis, Jazz, 1959. ", count: size / 40 + 1).utf8.prefix(size))
        let noise = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
        for (input, level) in [(text, Int32(9)), (text, 1), (noise, 9)] {
            let compressed = try Gzip.compress(input, level: level)
            #expect(compressed.starts(with: [0x1F, 0x8B]), "the gzip magic")
            let decoded = try Self.gunzip(compressed)
            #expect(decoded.status == 0)
            #expect(decoded.output == input, "size \(size), level \(level)")
            if input == text, size >= 1000 { #expect(compressed.count < input.count / 10, "text compresses") }
        }
    }

    @Test func aLevelZlibRefusesIsAnError() {
        #expect(throws: Gzip.Failure.self) { try Gzip.compress(Array("x".utf8), level: 42) }
    }
}
