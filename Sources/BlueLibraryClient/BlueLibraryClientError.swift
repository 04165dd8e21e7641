import Foundation

/// Everything a `BlueLibraryClient` call can fail with.
public enum BlueLibraryClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The request never got an HTTP answer: connection refused, DNS, reset, TLS, ...
    /// `code` is the `URLError` code (`NSURLErrorCannotConnectToHost`, ...).
    case transport(code: Int, message: String)
    /// No answer within the client's timeout.
    case timeout(seconds: Double)
    /// The request was cancelled (by `cancel()` on its task or the model).
    case cancelled
    /// The server answered with an error status other than 401 and 429; its problem document
    /// (or one made up from the status when the body was not problem JSON). A 403 is a key
    /// that lacks the scope or the library the request needs (`isAccessRefusal`).
    case problem(Problem)
    /// 401: the server is locked (write protection, and with `access.protectReads` reads too)
    /// and the request carried no token, or one the server refused (the problem's detail says
    /// which). Give the client a token (`init(baseURL:timeout:token:)` or a `tokenProvider`), or
    /// the right one. `retryAfter` is the server's `Retry-After` in seconds, when it sent one.
    case unauthorized(Problem, retryAfter: Int?)
    /// 429: too many requests, on BlueLibrary too many wrong tokens from this address: every
    /// request from it is refused, the right token too, until `retryAfter` seconds (the
    /// server's `Retry-After`; nil when it sent none) have passed.
    case tooManyRequests(Problem, retryAfter: Int?)
    /// The server answered with a success status, but the body was not what the call expects.
    case decoding(status: Int, message: String)
    /// The call could not be made into a request (a bad base URL or argument).
    case invalidRequest(String)
    /// A read of a `LibraryReplica` failed (an `AlbumListModel` on a replica): its message.
    case replica(String)

    /// The HTTP status, for `.problem`, `.unauthorized` and `.tooManyRequests`.
    public var status: Int? { problem?.status }

    /// The problem document, for `.problem`, `.unauthorized` and `.tooManyRequests`.
    public var problem: Problem? {
        switch self {
        case let .problem(problem), let .unauthorized(problem, _), let .tooManyRequests(problem, _): problem
        case .transport, .timeout, .cancelled, .decoding, .invalidRequest, .replica: nil
        }
    }

    /// Seconds the server asked to wait before trying again (`Retry-After`), for
    /// `.unauthorized` and `.tooManyRequests`.
    public var retryAfter: Int? {
        switch self {
        case let .unauthorized(_, seconds), let .tooManyRequests(_, seconds): seconds
        default: nil
        }
    }

    /// Whether the server refused the request for its key (or token), not for what it asks:
    /// `.unauthorized`, `.tooManyRequests`, or a `.problem` with status 403 (the key lacks the
    /// scope or the library the request needs). Such a refusal says nothing about the change
    /// itself, so a replica keeps it queued.
    public var isAccessRefusal: Bool {
        switch self {
        case .unauthorized, .tooManyRequests: true
        case let .problem(problem): problem.status == 403
        default: false
        }
    }

    /// One line for a person: the problem's detail, or what went wrong on the way.
    public var description: String {
        switch self {
        case let .transport(_, message): "cannot reach the server: \(message)"
        case let .timeout(seconds): "no answer from the server within \(Self.format(seconds)) s"
        case .cancelled: "the request was cancelled"
        case let .problem(problem), let .unauthorized(problem, _): problem.description
        case let .tooManyRequests(problem, seconds):
            // The server's detail already names the wait; say it when the detail does not.
            seconds.map { problem.description.contains(String($0)) ? problem.description : "\(problem.description) (retry after \($0) s)" }
                ?? problem.description
        case let .decoding(status, message): "unexpected answer from the server (HTTP \(status)): \(message)"
        case let .invalidRequest(message): message
        case let .replica(message): message
        }
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
