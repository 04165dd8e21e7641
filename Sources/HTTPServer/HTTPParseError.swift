/// Why a request could not be read. Each case maps to the status the client gets; after any
/// of them the connection is closed, since the framing can no longer be trusted.
public enum HTTPParseError: Error, Equatable, Sendable {
    case malformedRequestLine
    case requestLineTooLong
    case unsupportedVersion
    case headTooLarge
    case tooManyHeaders
    case malformedHeader
    case missingHost
    /// More than one Host field line (RFC 9112 §3.2).
    case multipleHosts
    case invalidContentLength
    case conflictingFraming
    case unsupportedTransferEncoding
    /// A Transfer-Encoding field that names no coding (RFC 9112 §6.1).
    case invalidTransferEncoding
    /// Transfer-Encoding in an HTTP/1.0 request: its framing cannot be trusted (RFC 9112 §6.1).
    case transferEncodingInHTTP10
    case malformedChunk
    case bodyTooLarge(limit: Int)

    public var status: HTTPStatus {
        switch self {
        case .requestLineTooLong: .uriTooLong
        case .unsupportedVersion: .httpVersionNotSupported
        case .headTooLarge, .tooManyHeaders: .requestHeaderFieldsTooLarge
        case .unsupportedTransferEncoding: .notImplemented
        case .bodyTooLarge: .contentTooLarge
        default: .badRequest
        }
    }

    /// A sentence for the problem document that says what to fix.
    public var detail: String {
        switch self {
        case .malformedRequestLine: "The request line must be 'METHOD /path HTTP/1.1'."
        case .requestLineTooLong: "The request line is too long; shorten the URL."
        case .unsupportedVersion: "Only HTTP/1.0 and HTTP/1.1 are supported."
        case .headTooLarge: "The request headers are too large; send fewer or smaller headers."
        case .tooManyHeaders: "The request has too many header fields."
        case .malformedHeader: "A header line is malformed; each must be 'Name: value' with no space before the colon."
        case .missingHost: "HTTP/1.1 requests need a Host header."
        case .multipleHosts: "Send exactly one Host header."
        case .invalidContentLength: "Content-Length must be one non-negative decimal number."
        case .conflictingFraming: "Send either Content-Length or Transfer-Encoding: chunked, not both."
        case .unsupportedTransferEncoding: "Only Transfer-Encoding: chunked is supported."
        case .invalidTransferEncoding: "Transfer-Encoding must name a coding (chunked); it must not be empty."
        case .transferEncodingInHTTP10: "HTTP/1.0 requests cannot use Transfer-Encoding; send Content-Length."
        case .malformedChunk: "The chunked body is malformed."
        case let .bodyTooLarge(limit): "The request body is larger than the limit of \(limit) bytes."
        }
    }
}
