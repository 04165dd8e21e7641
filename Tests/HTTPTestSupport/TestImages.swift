import Foundation

/// Images made by the tests themselves: plain ones drawn by the `vips` command (Debian
/// libvips-tools), and hostile or unusual ones built byte by byte here (EXIF with GPS spliced
/// into a JPEG, an animated GIF, headers patched to declare 30,000 × 30,000 pixels, truncated
/// and corrupt files). ``inspect(_:)`` decodes a result with the `vips` command, independently
/// of the code under test.
public enum TestImages {
    public struct CommandFailed: Error, CustomStringConvertible {
        public let description: String
    }

    /// What `vips` says about a decoded image.
    public struct Decoded: Sendable, Equatable {
        public var width: Int
        public var height: Int
        public var bands: Int
        /// libvips' loader, e.g. `jpegload`, `pngload`, `webpload`, `heifload`.
        public var loader: String
        /// Every metadata field name `vipsheader -a` lists.
        public var fields: [String]
    }

    /// An RGB colour.
    public typealias RGB = (red: Int, green: Int, blue: Int)

    /// Runs `vips` (or `vipsheader`) with `arguments`; its stdout.
    @discardableResult
    public static func vips(_ arguments: [String], tool: String = "vips") throws -> String {
        let outcome = try ChildProcess.run(
            "/usr/bin/" + tool, arguments, environment: ["PATH": "/usr/bin:/bin", "VIPS_WARNING": "0"])
        guard outcome.status == 0 else {
            throw CommandFailed(description: "\(tool) \(arguments.joined(separator: " ")): \(String(decoding: outcome.stderr, as: UTF8.self))")
        }
        return String(decoding: outcome.stdout, as: UTF8.self)
    }

    /// A `width` × `height` image of one colour (half transparent with `alpha`), saved by `vips` with `save` options, e.g. `["--Q", "90"]`.
    /// `fileExtension` picks the format: jpg, png, webp, gif, tif. Metadata stripped.
    public static func photo(
        width: Int, height: Int, colour: RGB = (200, 30, 30), fileExtension: String = "jpg", alpha: Bool = false,
        save: [String] = []
    ) throws -> [UInt8] {
        let directory = try TemporaryDirectory(prefix: "test-images")
        let base = try solid(width: width, height: height, colour: colour, alpha: alpha, in: directory)
        let out = directory.file("out.\(fileExtension)")
        try vips(["copy", base, out + "[strip]"] + save)
        return try read(out)
    }

    /// A CMYK JPEG (converted with libvips' built-in CMYK profile, the profile then stripped,
    /// as many print-shop covers are) of `colour`.
    public static func cmykJPEG(width: Int, height: Int, colour: RGB) throws -> [UInt8] {
        let directory = try TemporaryDirectory(prefix: "test-images")
        let base = try solid(width: width, height: height, colour: colour, alpha: false, in: directory)
        try vips(["icc_export", base, directory.file("cmyk.v"), "--output-profile", "cmyk"])
        try vips(["jpegsave", directory.file("cmyk.v"), directory.file("cmyk.jpg"), "--strip"])
        return try read(directory.file("cmyk.jpg"))
    }

    /// A 16-bit RGB PNG whose samples are `samples` (0...65535).
    public static func png16(width: Int, height: Int, samples: RGB) throws -> [UInt8] {
        let directory = try TemporaryDirectory(prefix: "test-images")
        try vips(["black", directory.file("black.v"), "\(width)", "\(height)", "--bands", "3"])
        try vips(["linear", directory.file("black.v"), directory.file("float.v"), "1 1 1",
                  "\(samples.red) \(samples.green) \(samples.blue)"])
        try vips(["cast", directory.file("float.v"), directory.file("short.v"), "ushort"])
        try vips(["copy", directory.file("short.v"), directory.file("rgb16.v"), "--interpretation", "rgb16"])
        try vips(["pngsave", directory.file("rgb16.v"), directory.file("out.png"), "--bitdepth", "16"])
        return try read(directory.file("out.png"))
    }

    /// An animated GIF whose frames are `width` × `height` of the given colours, in order.
    public static func animatedGIF(width: Int, height: Int, frames: [RGB]) -> [UInt8] {
        GIFWriter.animation(width: width, height: height, frames: frames)
    }

    /// The animated GIF as an animated WebP (libvips converts every frame).
    public static func animatedWebP(width: Int, height: Int, frames: [RGB]) throws -> [UInt8] {
        let directory = try TemporaryDirectory(prefix: "test-images")
        try Data(animatedGIF(width: width, height: height, frames: frames)).write(to: URL(fileURLWithPath: directory.file("a.gif")))
        try vips(["copy", directory.file("a.gif") + "[n=-1]", directory.file("a.webp")])
        return try read(directory.file("a.webp"))
    }

    /// A JPEG of `width` × `height` stored pixels with an EXIF block carrying `orientation`
    /// (1...8), a GPS position and an ImageDescription of ``exifMarker``.
    public static func jpegWithEXIF(width: Int, height: Int, orientation: Int, colour: RGB = (200, 30, 30)) throws -> [UInt8] {
        let jpeg = try photo(width: width, height: height, colour: colour)
        return Array(jpeg.prefix(2)) + EXIFBlock.app1(orientation: orientation, description: exifMarker) + Array(jpeg.dropFirst(2))
    }

    /// The ImageDescription ``jpegWithEXIF(width:height:orientation:colour:)`` writes; a variant
    /// containing these bytes did not strip the metadata.
    public static let exifMarker = "BLUELIBRARY-SECRET-PLACE"

    /// A small file whose header declares `width` × `height` pixels (default 30,000²): a
    /// decompression bomb. `fileExtension`: jpg (SOF patched), png (IHDR patched, CRC redone)
    /// or gif (screen and frame patched).
    public static func bomb(fileExtension: String, width: Int = 30_000, height: Int = 30_000) throws -> [UInt8] {
        var bytes = try photo(width: 64, height: 64, fileExtension: fileExtension)
        switch fileExtension {
        case "jpg":
            guard let sof = JPEGSegments.startOfFrame(in: bytes) else { throw CommandFailed(description: "no SOF in the JPEG") }
            bytes.replaceSubrange(sof + 5..<sof + 9, with: be16(height) + be16(width))
        case "png":
            bytes.replaceSubrange(16..<24, with: be32(width) + be32(height))
            bytes.replaceSubrange(29..<33, with: be32(Int(CRC32.of(Array(bytes[12..<29])))))
        case "gif":
            bytes.replaceSubrange(6..<10, with: le16(width) + le16(height))
            if let descriptor = bytes.firstIndex(of: 0x2C) {
                bytes.replaceSubrange(descriptor + 5..<descriptor + 9, with: le16(width) + le16(height))
            }
        default:
            throw CommandFailed(description: "no bomb for \(fileExtension)")
        }
        return bytes
    }

    /// `bytes` cut to the first `fraction` of its length.
    public static func truncated(_ bytes: [UInt8], keeping fraction: Double = 0.5) -> [UInt8] {
        Array(bytes.prefix(Int(Double(bytes.count) * fraction)))
    }

    /// A PNG whose compressed image data (IDAT) is garbled, with the chunk's CRC redone so
    /// the damage is found by the decompressor (an error), not only by the checksum (which
    /// libpng reports as a warning).
    public static func corruptPNG() throws -> [UInt8] {
        var bytes = try photo(width: 200, height: 200, fileExtension: "png")
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            if Array(bytes[offset + 4..<offset + 8]) == Array("IDAT".utf8), length > 8 {
                let data = offset + 8
                for i in data + 2..<data + length - 4 { bytes[i] = UInt8(truncatingIfNeeded: i &* 131 &+ 7) }
                let crc = Int(CRC32.of(Array(bytes[offset + 4..<data + length])))
                bytes.replaceSubrange(data + length..<data + length + 4, with: be32(crc))
                return bytes
            }
            offset += 12 + length
        }
        throw CommandFailed(description: "no IDAT chunk in the PNG")
    }

    /// `png` with its compressed image data (IDAT) cut to the first half, the chunk's length
    /// and CRC redone and every later chunk (IEND) kept: a well-formed file whose pixel data
    /// ends early, found only while decoding the rows (not by a look at the chunk layout).
    public static func shortIDAT(_ png: [UInt8]) throws -> [UInt8] {
        var out = Array(png.prefix(8))
        var offset = 8
        var cut = false
        while offset + 12 <= png.count {
            let length = png[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = Array(png[offset + 4..<offset + 8])
            var data = Array(png[offset + 8..<offset + 8 + length])
            if type == Array("IDAT".utf8), !cut {
                data = Array(data.prefix(data.count / 2))
                cut = true
            }
            out += be32(data.count) + type + data + be32(Int(CRC32.of(type + data)))
            offset += 12 + length
        }
        guard cut else { throw CommandFailed(description: "no IDAT chunk in the PNG") }
        return out
    }

    /// Decodes `bytes` fully with `vips` (every pixel: `vips avg`) and reads its header.
    public static func inspect(_ bytes: [UInt8]) throws -> Decoded {
        let directory = try TemporaryDirectory(prefix: "test-images")
        let file = directory.file("image")
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        try vips(["avg", file])
        // One `vipsheader -a` for every field (a process per field made the image suites spend
        // most of their time starting processes, holding the test pool's threads meanwhile).
        var values: [String: String] = [:]
        for line in try vips(["-a", file], tool: "vipsheader").split(separator: "\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            values[String(line[..<colon]).trimmingCharacters(in: .whitespaces)] =
                String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        }
        return Decoded(
            width: values["width"].flatMap { Int($0) } ?? -1, height: values["height"].flatMap { Int($0) } ?? -1,
            bands: values["bands"].flatMap { Int($0) } ?? -1, loader: values["vips-loader"] ?? "", fields: values.keys.sorted())
    }

    /// The pixel at (`x`, `y`) of the decoded image, one value per band.
    public static func pixel(_ bytes: [UInt8], x: Int, y: Int) throws -> [Int] {
        let directory = try TemporaryDirectory(prefix: "test-images")
        let file = directory.file("image")
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        return try vips(["getpoint", file, "\(x)", "\(y)"]).split(separator: " ").compactMap {
            Double($0.trimmingCharacters(in: .whitespacesAndNewlines)).map { Int($0.rounded()) }
        }
    }

    // MARK: Internals

    private static func solid(width: Int, height: Int, colour: RGB, alpha: Bool, in directory: TemporaryDirectory) throws -> String {
        try vips(["black", directory.file("black.v"), "\(width)", "\(height)", "--bands", alpha ? "4" : "3"])
        let scale = alpha ? "1 1 1 1" : "1 1 1"
        let offset = "\(colour.red) \(colour.green) \(colour.blue)" + (alpha ? " 128" : "")
        try vips(["linear", directory.file("black.v"), directory.file("solid.v"), scale, offset, "--uchar"])
        try vips(["copy", directory.file("solid.v"), directory.file("final.v"), "--interpretation", "srgb"])
        return directory.file("final.v")
    }

    static func read(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw CommandFailed(description: "\(path) is missing") }
        return Array(data)
    }

    static func be16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
    static func be32(_ value: Int) -> [UInt8] { be16(value >> 16) + be16(value & 0xFFFF) }
    static func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
}
