import Foundation

/// A cover ready to be served: where its bytes are and what to say about them.
public struct CachedCover: Sendable, Equatable {
    /// The cover URL it was fetched from (as the album holds it).
    public let url: String
    /// Where the bytes are: normally a file in the cache (stream it with `sendfile`).
    public let content: CoverContent
    /// The media type sniffed from the bytes (`image/png`, `image/jpeg`, `image/gif`,
    /// `image/webp`), never the upstream's claim.
    public let mediaType: String
    /// Size of the image in bytes.
    public let length: Int
    /// A strong entity tag of the bytes themselves (quoted, SHA-256 based), for `ETag` and
    /// `If-None-Match`; it does not change when a revalidation finds the same bytes.
    public let etag: String
    /// When the upstream last confirmed these bytes (fetch or `304`).
    public let validatedAt: Date
    /// Until when the copy counts as fresh; after it, requests still get it while it is
    /// revalidated. `Cache-Control: max-age` can be derived from it.
    public let freshUntil: Date

    public init(
        url: String, content: CoverContent, mediaType: String, length: Int, etag: String, validatedAt: Date,
        freshUntil: Date
    ) {
        self.url = url
        self.content = content
        self.mediaType = mediaType
        self.length = length
        self.etag = etag
        self.validatedAt = validatedAt
        self.freshUntil = freshUntil
    }
}

/// Where a cover's bytes are.
public enum CoverContent: Sendable, Equatable {
    /// A file in the cache directory. It is replaced by rename, never rewritten in place, and
    /// eviction may remove it: open it once and send what `fstat` says, or fail the response.
    case file(path: String)
    /// The bytes themselves, when the cache could not store them (disk full, unwritable
    /// directory): "serve without caching".
    case memory([UInt8])
}
