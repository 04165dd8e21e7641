/// Why a cover could not be had, saying what the upstream did, for a `502` problem.
///
/// `reason` is a payload-free code for logs, metrics and the problem's type; `detail` is a
/// sentence safe to show a client (it names the URL's host at most, never a local path).
public struct CoverError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, Equatable, CaseIterable {
        /// The cover URL is not an absolute http(s) URL with a host.
        case invalidURL = "invalid-url"
        /// The upstream answered with a status other than 200 (see `upstreamStatus`).
        case upstreamStatus = "upstream-status"
        /// The connect or the whole transfer took longer than allowed.
        case timeout
        /// The body is larger than the limit (by `Content-Length` or while streaming).
        case tooLarge = "too-large"
        /// The bytes are not a PNG, JPEG, GIF or WebP image.
        case notAnImage = "not-an-image"
        /// The address the host resolved to is refused (loopback, private, link-local, ...).
        case blockedAddress = "blocked-address"
        /// More redirects than allowed, a redirect loop, or a redirect to a non-http(s) URL.
        case badRedirect = "bad-redirect"
        /// The host name did not resolve or the connection was refused.
        case connectionFailed = "connection-failed"
        /// The connection broke before the whole body arrived.
        case connectionDropped = "connection-dropped"
        /// Any other transfer error (TLS, protocol).
        case transferFailed = "transfer-failed"
        /// Too many fetches are queued, or the cover source is shutting down.
        case unavailable
        /// A sized variant was refused: the original declares more pixels than allowed (a
        /// decompression bomb), checked from its header before decoding.
        case imageTooLarge = "image-too-large"
        /// A sized variant could not be made: the original is truncated, corrupt, or not an
        /// image the decoder accepts.
        case imageUnreadable = "image-unreadable"
        /// A sized variant could not be encoded: the server's encoder failed, not the original.
        case variantEncodeFailed = "variant-encode-failed"
        /// Too many sized variants are waiting to be made (their own small queue is full).
        case variantsBusy = "variants-busy"
        /// The image library (libvips) did not start: no sized variant can be made.
        case imagesUnavailable = "images-unavailable"

        /// Whether the reason is about making a sized variant, not about fetching.
        public var isVariantFailure: Bool {
            [.imageTooLarge, .imageUnreadable, .variantEncodeFailed, .variantsBusy, .imagesUnavailable].contains(self)
        }

        /// Whether the original cover itself is the cause (a bomb, or bytes that do not decode),
        /// so the same original always fails the same way.
        public var blamesTheOriginal: Bool { self == .imageTooLarge || self == .imageUnreadable }
    }

    public let reason: Reason
    /// The upstream's HTTP status, when it answered with one.
    public let upstreamStatus: Int?
    public let detail: String

    public init(_ reason: Reason, upstreamStatus: Int? = nil, detail: String) {
        self.reason = reason
        self.upstreamStatus = upstreamStatus
        self.detail = detail
    }

    public var description: String { "\(reason.rawValue): \(detail)" }
}
