import CVips

/// Makes thumbnails with libvips: scaled so the longer side fits, never enlarged, shrunk while
/// loading (JPEG and WebP decode at 1/2, 1/4, 1/8 scale), turned upright by the EXIF
/// orientation, first frame of an animation, CMYK and 16-bit sources converted to 8-bit sRGB,
/// an alpha band dropped when every pixel is opaque (GIFs always load with one), every metadata
/// block (EXIF with GPS, XMP, IPTC, ICC) stripped from the result.
///
/// Hostile input: the header is read first and an image declaring more than `maxPixels` is
/// refused before a pixel is decoded; only the JPEG, PNG, GIF, WebP and HEIF loaders are open
/// (``VipsRuntime``); truncated or corrupt data fails (libvips `fail_on=error`) instead of
/// yielding a grey half-image.
///
/// ```swift
/// let thumbnail = try Thumbnailer().thumbnail(of: original, longestSide: 256, format: .exactly(.webp))
/// ```
///
/// Thread-safe: a value, and libvips is thread-safe. Each call runs on the caller's thread (and
/// one libvips worker thread); call it from a worker pool, never an event loop.
public struct Thumbnailer: Sendable {
    /// Largest width × height of the source's first frame. Default 25,000,000 (5000 × 5000).
    /// It bounds the memory one thumbnail may take: JPEG and WebP shrink while loading, but an
    /// interlaced PNG is decoded whole (up to 8 bytes a pixel for 16-bit RGBA, 200 MB at the
    /// default) and a GIF frame at 4 bytes a pixel. So the bound is `threads × maxPixels × 8 B`
    /// (libvips itself runs one worker per call, ``VipsRuntime``).
    public var maxPixels: Int
    /// JPEG, WebP and AVIF quality (1...100). Default 80.
    public var quality: Int
    /// AVIF encoder effort, 0 (fastest) ... 9. Default 2: AV1 encoding is slow.
    public var avifEffort: Int

    public init(maxPixels: Int = 25_000_000, quality: Int = 80, avifEffort: Int = 2) {
        self.maxPixels = maxPixels
        self.quality = min(100, max(1, quality))
        self.avifEffort = min(9, max(0, avifEffort))
    }

    /// One thumbnail.
    public struct Thumbnail: Sendable, Equatable {
        public var bytes: [UInt8]
        public var format: ImageFormat
        public var width: Int
        public var height: Int
        /// The source's header (first frame, before orientation).
        public var source: ImageHeader
    }

    /// The thumbnail of the image in `bytes` whose longer side is `longestSide` (or the
    /// source's, when that is smaller).
    /// - Throws: ``ImageError``: `tooManyPixels` (refused from the header), `unreadable` (not
    ///   an image libvips may read), `corrupt` (truncated or broken data), `encodeFailed`.
    public func thumbnail(of bytes: [UInt8], longestSide: Int, format: ThumbnailFormat) throws(ImageError) -> Thumbnail {
        try VipsRuntime.start()
        let side = Int32(clamping: max(1, longestSide))
        // libvips reads from the buffer without copying it: everything happens inside this closure.
        return try bytes.withUnsafeBytes { buffer in Result { () throws(ImageError) in try make(buffer, side, format) } }.get()
    }

    private func make(_ buffer: UnsafeRawBufferPointer, _ side: Int32, _ format: ThumbnailFormat) throws(ImageError) -> Thumbnail {
        let header = try ImageHeader.read(buffer)
        guard header.pixels <= maxPixels else {
            throw ImageError(.tooManyPixels, detail:
                "the image declares \(header.width) x \(header.height) pixels, more than the limit of \(maxPixels)")
        }
        if header.loader.hasPrefix("pngload"), PNGLayout.isCutShort(buffer) {
            throw ImageError(.corrupt, detail: "the PNG file ends before its IEND chunk (truncated)")
        }
        let base = buffer.baseAddress!
        // Never enlarged: the square box is at most the image's longer side (any orientation).
        let box = min(side, Int32(clamping: max(header.width, header.height)))
        let scaled = try OwnedImage.make(.corrupt, "thumbnail") {
            bl_vips_thumbnail_buffer(base, buffer.count, &$0, box, box)
        }
        let ready = try scaled.eightBitSRGB().withoutOpaqueAlpha().withoutMetadata()
        let chosen = format.resolved(hasAlpha: ready.hasAlpha)
        guard chosen.isSupported else {
            throw ImageError(.encodeFailed, detail: "this libvips build cannot write \(chosen.rawValue)")
        }
        let encoded = try ready.encoded(as: chosen, quality: quality, avifEffort: avifEffort)
        return Thumbnail(bytes: encoded, format: chosen, width: ready.width, height: ready.height, source: header)
    }
}
