/// The formats thumbnails are written in.
public enum ImageFormat: String, Sendable, CaseIterable, Hashable {
    case jpeg
    case png
    case webp
    case avif

    public var mediaType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .webp: "image/webp"
        case .avif: "image/avif"
        }
    }

    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        case .webp: "webp"
        case .avif: "avif"
        }
    }

    /// Whether this libvips build writes the format (AVIF needs libheif with an AV1 encoder;
    /// probed once).
    public var isSupported: Bool { self == .avif ? VipsRuntime.canWriteAVIF : true }
}

/// Which format a thumbnail is written in.
public enum ThumbnailFormat: Sendable, Hashable {
    /// Exactly this one (fails with `encodeFailed` when the build cannot write it).
    case exactly(ImageFormat)
    /// JPEG, or PNG when the image has transparency: what every client reads.
    case jpegOrPNG

    /// The format for a result with or without an alpha channel.
    func resolved(hasAlpha: Bool) -> ImageFormat {
        switch self {
        case .exactly(let format): format
        case .jpegOrPNG: hasAlpha ? .png : .jpeg
        }
    }
}
