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
    /// The server answered with an error status; its problem document (or one made up from
    /// the status when the body was not problem JSON).
    case problem(Problem)
    /// The server answered with a success status, but the body was not what the call expects.
    case decoding(status: Int, message: String)
    /// The call could not be made into a request (a bad base URL or argument).
    case invalidRequest(String)
    /// A read of a `LibraryReplica` failed (an `AlbumListModel` on a replica): its message.
    case replica(String)

    /// The HTTP status, for `.problem`.
    public var status: Int? {
        if case let .problem(problem) = self { return problem.status }
        return nil
    }

    /// The problem document, for `.problem`.
    public var problem: Problem? {
        if case let .problem(problem) = self { return problem }
        return nil
    }

    /// One line for a person: the problem's detail, or what went wrong on the way.
    public var description: String {
        switch self {
        case let .transport(_, message): "cannot reach the server: \(message)"
        case let .timeout(seconds): "no answer from the server within \(Self.format(seconds)) s"
        case .cancelled: "the request was cancelled"
        case let .problem(problem): problem.description
        case let .decoding(status, message): "unexpected answer from the server (HTTP \(status)): \(message)"
        case let .invalidRequest(message): message
        case let .replica(message): message
        }
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
