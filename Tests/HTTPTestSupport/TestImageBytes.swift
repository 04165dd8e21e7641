/// Byte-level builders behind ``TestImages``.

/// An EXIF APP1 segment (little-endian TIFF): IFD0 with ImageDescription, Orientation and a
/// GPS IFD holding a latitude (N 52° 31' 12").
enum EXIFBlock {
    static func app1(orientation: Int, description: String) -> [UInt8] {
        let text = Array(description.utf8) + [0]
        var tiff: [UInt8] = [0x49, 0x49, 0x2A, 0x00] + le32(8)
        // IFD0 at 8: 3 entries → ends at 8 + 2 + 36 + 4 = 50. GPS IFD at 50: 2 entries → ends at 80.
        // Latitude rationals at 80 (24 bytes), the description at 104.
        tiff += le16(3)
        tiff += entry(tag: 0x010E, type: 2, count: text.count, value: le32(104))
        tiff += entry(tag: 0x0112, type: 3, count: 1, value: le16(orientation) + [0, 0])
        tiff += entry(tag: 0x8825, type: 4, count: 1, value: le32(50))
        tiff += le32(0)
        tiff += le16(2)
        tiff += entry(tag: 0x0001, type: 2, count: 2, value: [0x4E, 0, 0, 0])
        tiff += entry(tag: 0x0002, type: 5, count: 3, value: le32(80))
        tiff += le32(0)
        for (numerator, denominator) in [(52, 1), (31, 1), (12, 1)] { tiff += le32(numerator) + le32(denominator) }
        tiff += text
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        return [0xFF, 0xE1] + TestImages.be16(payload.count + 2) + payload
    }

    private static func entry(tag: Int, type: Int, count: Int, value: [UInt8]) -> [UInt8] {
        le16(tag) + le16(type) + le32(count) + value
    }

    static func le16(_ value: Int) -> [UInt8] { TestImages.le16(value) }
    static func le32(_ value: Int) -> [UInt8] { le16(value & 0xFFFF) + le16(value >> 16) }
}

enum JPEGSegments {
    /// The offset of the baseline or progressive start-of-frame marker (FFC0/FFC2).
    static func startOfFrame(in bytes: [UInt8]) -> Int? {
        var offset = 2
        while offset + 4 <= bytes.count, bytes[offset] == 0xFF {
            let marker = bytes[offset + 1]
            if marker == 0xC0 || marker == 0xC2 { return offset }
            offset += 2 + (Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]))
        }
        return nil
    }
}

/// CRC-32 (ISO 3309, as PNG chunks use it).
enum CRC32 {
    static func of(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return crc ^ 0xFFFF_FFFF
    }
}

/// A GIF89a animation with one colour per frame, looping forever. The image data is LZW in its
/// simplest valid form: 8-bit codes (minimum code size 7), every pixel a literal, a clear code
/// every 100 literals so the code size never grows.
enum GIFWriter {
    static func animation(width: Int, height: Int, frames: [TestImages.RGB]) -> [UInt8] {
        var bytes = Array("GIF89a".utf8) + TestImages.le16(width) + TestImages.le16(height)
        // Global colour table of 128 entries (size field 6: 2^(6+1)), colour resolution 8 bits.
        bytes += [0xF6, 0, 0]
        for index in 0..<128 {
            let colour: TestImages.RGB = index < frames.count ? frames[index] : (0, 0, 0)
            bytes += [UInt8(colour.red), UInt8(colour.green), UInt8(colour.blue)]
        }
        bytes += [0x21, 0xFF, 0x0B] + Array("NETSCAPE2.0".utf8) + [0x03, 0x01, 0x00, 0x00, 0x00]
        for index in frames.indices {
            bytes += [0x21, 0xF9, 0x04, 0x04] + TestImages.le16(10) + [0x00, 0x00]
            bytes += [0x2C] + TestImages.le16(0) + TestImages.le16(0) + TestImages.le16(width) + TestImages.le16(height) + [0x00]
            bytes += [0x07]
            var codes: [UInt8] = []
            for pixel in 0..<(width * height) {
                if pixel % 100 == 0 { codes.append(0x80) }
                codes.append(UInt8(index))
            }
            codes.append(0x81)
            var start = 0
            while start < codes.count {
                let block = codes[start..<min(codes.count, start + 255)]
                bytes += [UInt8(block.count)] + block
                start += 255
            }
            bytes += [0x00]
        }
        return bytes + [0x3B]
    }
}
