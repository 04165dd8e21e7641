import Images

/// One sized variant of a cover: its longer side and its format (`GET .../cover?size=N`).
///
/// Sizes come from a small fixed set (``allowedSizes``), so requests cannot fill the cache with
/// variants: at most `allowedSizes.count × CoverVariantFormat.allCases.count` per cover.
public struct CoverVariant: Sendable, Hashable, CustomStringConvertible {
    /// The longer sides a variant may have, in pixels.
    public static let allowedSizes = [64, 128, 256, 512, 1024]

    /// The longer side in pixels (a smaller original keeps its own size: never enlarged).
    public let size: Int
    public let format: CoverVariantFormat

    /// nil when `size` is not one of ``allowedSizes``.
    public init?(size: Int, format: CoverVariantFormat) {
        guard Self.allowedSizes.contains(size) else { return nil }
        self.size = size
        self.format = format
    }

    public var description: String { "\(size).\(format.rawValue)" }

    /// The cache key of this variant of the cover at `url` (normal form). It starts with
    /// `variant:`, so it can never be a cover URL (those are http or https).
    func key(of url: String) -> String { "variant:\(description):\(url)" }

    /// Every key a variant of `url` may be stored under (to invalidate them with the original).
    static func allKeys(of url: String) -> [String] {
        allowedSizes.flatMap { size in
            CoverVariantFormat.allCases.compactMap { CoverVariant(size: size, format: $0)?.key(of: url) }
        }
    }
}

/// The format of a variant, as negotiated from `Accept` by the caller.
public enum CoverVariantFormat: String, Sendable, CaseIterable, Hashable {
    /// AVIF: only when ``canWriteAVIF``.
    case avif
    case webp
    /// JPEG, or PNG when the cover has transparency: what every client reads.
    case jpegOrPNG = "jpeg-or-png"

    /// Whether this libvips build can write AVIF (libheif with an AV1 encoder).
    public static var canWriteAVIF: Bool { ImageFormat.avif.isSupported }

    var thumbnailFormat: ThumbnailFormat {
        switch self {
        case .avif: .exactly(.avif)
        case .webp: .exactly(.webp)
        case .jpegOrPNG: .jpegOrPNG
        }
    }
}
