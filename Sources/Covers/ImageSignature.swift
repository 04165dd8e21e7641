/// The image formats the cache accepts, recognised by their first bytes ("magic numbers"),
/// never by the upstream's `Content-Type` or the URL's extension.
///
/// Signatures: PNG (<https://www.w3.org/TR/png/#5PNG-file-signature>), JPEG (SOI marker
/// `FF D8 FF`), GIF (`GIF87a`/`GIF89a`), WebP (RIFF container with form type `WEBP`,
/// <https://developers.google.com/speed/webp/docs/riff_container>).
public enum ImageSignature: String, Sendable, CaseIterable {
    case png = "image/png"
    case jpeg = "image/jpeg"
    case gif = "image/gif"
    case webp = "image/webp"

    /// The media type to store and serve.
    public var mediaType: String { rawValue }

    /// The format `bytes` start with, or nil when they are not one of the accepted images.
    public static func sniff(_ bytes: some Collection<UInt8>) -> ImageSignature? {
        let head = Array(bytes.prefix(12))
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if head.starts(with: Array("GIF87a".utf8)) || head.starts(with: Array("GIF89a".utf8)) { return .gif }
        if head.count == 12, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) {
            return .webp
        }
        return nil
    }
}
