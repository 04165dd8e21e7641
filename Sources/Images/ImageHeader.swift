import CVips

/// What an image's header declares, read without decoding its pixels.
public struct ImageHeader: Sendable, Equatable {
    /// Of the first frame, before EXIF orientation is applied.
    public var width: Int
    public var height: Int
    /// Frames of an animation; 1 for a still image.
    public var pages: Int
    public var hasAlpha: Bool
    /// libvips' loader, e.g. `jpegload_buffer`, `pngload_buffer`, `gifload_buffer`.
    public var loader: String

    /// Pixels of one frame (width × height), without overflow.
    public var pixels: Int { width.multipliedReportingOverflow(by: height).overflow ? Int.max : width * height }

    /// Reads the header of the image in `bytes`.
    /// - Throws: ``ImageError`` `unreadable` when the bytes are not an image libvips may load.
    public static func read(_ bytes: [UInt8]) throws(ImageError) -> ImageHeader {
        try VipsRuntime.start()
        return try bytes.withUnsafeBytes { buffer in Result { () throws(ImageError) in try read(buffer) } }.get()
    }

    /// The header of `buffer` (which must stay valid for the call).
    static func read(_ buffer: UnsafeRawBufferPointer) throws(ImageError) -> ImageHeader {
        guard let base = buffer.baseAddress, buffer.count > 0 else {
            throw ImageError(.unreadable, detail: "the image is empty")
        }
        let image = try OwnedImage.make(.unreadable, "not a readable JPEG, PNG, GIF, WebP or HEIF/AVIF image") {
            bl_vips_header_from_buffer(base, buffer.count, &$0)
        }
        // The loader's name points into the image's metadata: copied while the image is held.
        let loader = image.withPointer { pointer -> String in
            var name: UnsafePointer<CChar>?
            guard vips_image_get_string(pointer, "vips-loader", &name) == 0, let name else { return "" }
            return String(cString: name)
        }
        return ImageHeader(
            width: image.width, height: image.height, pages: max(1, image.pages), hasAlpha: image.hasAlpha, loader: loader)
    }
}
