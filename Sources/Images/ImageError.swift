/// Why an image could not be read or made, with a sentence safe to show a client (it names
/// sizes and libvips' reason, never a path).
public struct ImageError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, Equatable, CaseIterable {
        /// The image declares more pixels than the limit (a decompression bomb, or simply too
        /// big); refused from its header, before any pixel is decoded.
        case tooManyPixels = "too-many-pixels"
        /// Not an image libvips may read (unknown or blocked format), or its header is broken.
        case unreadable
        /// The pixels could not be decoded: truncated or corrupt data.
        case corrupt
        /// The result could not be encoded in the requested format.
        case encodeFailed = "encode-failed"
        /// libvips did not start.
        case unavailable
    }

    public let reason: Reason
    public let detail: String

    public init(_ reason: Reason, detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "\(reason.rawValue): \(detail)" }
}
