/// The chunk layout of a PNG file, walked without decoding anything: a signature, then chunks
/// of a big-endian length, a four-letter type, the data and a CRC, up to `IEND`
/// (<https://www.w3.org/TR/png/#5Chunk-layout>).
///
/// A thumbnail of a PNG cut short must fail. libvips reports a truncated PNG while decoding,
/// but in 8.14 that report was seen to get lost under concurrency (see ``VipsRuntime``), so the
/// layout is checked first, deterministically: a file that ends before its `IEND` chunk is
/// refused before libvips reads a row.
enum PNGLayout {
    private static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    private static let end: [UInt8] = Array("IEND".utf8)

    /// Whether `buffer` is a PNG file that ends before its `IEND` chunk (or inside a chunk);
    /// false for a complete PNG and for anything that is not a PNG.
    static func isCutShort(_ buffer: UnsafeRawBufferPointer) -> Bool {
        guard buffer.count >= signature.count, buffer.prefix(signature.count).elementsEqual(signature) else { return false }
        var offset = signature.count
        while offset + 12 <= buffer.count {
            let length = (0..<4).reduce(0) { $0 << 8 | Int(buffer[offset + $1]) }
            guard offset + 12 + length <= buffer.count else { return true }
            if buffer[(offset + 4)..<(offset + 8)].elementsEqual(end) { return false }
            offset += 12 + length
        }
        return true
    }
}
