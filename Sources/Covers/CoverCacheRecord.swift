import Foundation

/// What the cache knows about one stored cover; kept on disk as `<url hash>.json` beside the
/// image, so the index survives a restart without a database.
struct CoverCacheRecord: Codable, Sendable, Equatable {
    /// The cover URL in normal form (the key).
    var url: String
    /// The image's file name in the cache directory: `<url hash>-<content hash prefix>.<ext>`.
    var file: String
    var mediaType: String
    var length: Int
    /// SHA-256 of the image bytes, hex.
    var contentHash: String
    /// The upstream's validators, sent back when revalidating.
    var upstreamETag: String?
    var upstreamLastModified: String?
    /// When the upstream last confirmed the bytes.
    var validatedAt: Date
    /// For a sized variant: the entity tag of the original it was made from (a variant of
    /// other bytes is stale); nil for an original.
    var source: String? = nil

    /// The entity tag served for these bytes.
    var etag: String { "\"" + contentHash.prefix(32) + "\"" }

    /// Whether `file` has exactly the shape the cache writes: a record read from disk can name
    /// nothing outside the cache directory.
    static func isCacheFileName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, ["png", "jpg", "gif", "webp", "avif"].contains(parts[1]) else { return false }
        let stem = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        return stem.count == 2 && stem[0].utf8.count == 64 && stem[1].utf8.count == 16
            && (stem[0] + stem[1]).utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    static func fileExtension(for format: ImageSignature) -> String {
        switch format {
        case .png: "png"
        case .jpeg: "jpg"
        case .gif: "gif"
        case .webp: "webp"
        }
    }
}
