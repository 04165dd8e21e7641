/// Removes the metadata chunks (`EXIF`, `XMP `, `ICCP`) from a WebP file and clears their flags
/// in its `VP8X` header.
///
/// libvips 8.14's `webpsave` ignores `strip` and writes an EXIF block it generates (orientation,
/// resolution); the thumbnails must carry none. Layout: a RIFF container (`RIFF`, size, `WEBP`)
/// of chunks (four-character code, little-endian size, payload, a pad byte when the size is odd),
/// <https://developers.google.com/speed/webp/docs/riff_container>.
enum WebPMetadata {
    private static let removed: Set<String> = ["EXIF", "XMP ", "ICCP"]
    /// VP8X flag bits: ICC profile 0x20, EXIF 0x08, XMP 0x04.
    private static let metadataFlags: UInt8 = 0x20 | 0x08 | 0x04

    /// `webp` without metadata chunks; unchanged when it is not a well-formed RIFF WebP file.
    static func stripped(_ webp: [UInt8]) -> [UInt8] {
        guard webp.count >= 12, webp.starts(with: Array("RIFF".utf8)), Array(webp[8..<12]) == Array("WEBP".utf8) else {
            return webp
        }
        var chunks: [UInt8] = []
        var offset = 12
        while offset + 8 <= webp.count {
            let code = String(decoding: webp[offset..<offset + 4], as: UTF8.self)
            let size = (0..<4).reduce(0) { $0 | Int(webp[offset + 4 + $1]) << (8 * $1) }
            let end = offset + 8 + size + (size & 1)
            guard end <= webp.count || (end == webp.count + 1 && size & 1 == 1) else { return webp }
            var chunk = Array(webp[offset..<min(end, webp.count)])
            if code == "VP8X", chunk.count > 8 { chunk[8] &= ~metadataFlags }
            if !removed.contains(code) { chunks += chunk }
            offset = end
        }
        let riffSize = 4 + chunks.count
        let sizeBytes = (0..<4).map { UInt8(truncatingIfNeeded: riffSize >> (8 * $0)) }
        return Array("RIFF".utf8) + sizeBytes + Array("WEBP".utf8) + chunks
    }
}
