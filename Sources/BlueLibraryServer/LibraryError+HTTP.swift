import BlueLibraryAPI
import Essentials
import HTTPServer
import Library
import Storage

extension LibraryError: HTTPResponseError {
    /// The one place where a domain refusal gets its HTTP status (API.md conventions); nil for a
    /// storage failure (the error renderer logs it with the request id and answers a 500 that
    /// shows no internals, or 503/507 for an unavailable database or a full disk).
    public var problem: HTTPError? {
        let type = "urn:bluelibrary:problem:\(code)"
        switch self {
        case .notFound, .invalidAlbumID:
            return HTTPError(.notFound, detail: message, type: type, title: "Album not found")
        case let .indexOutOfRange(index, _):
            if index < 0 { return HTTPError(.badRequest, detail: message, type: type, title: "Invalid index") }
            return HTTPError(.notFound, detail: message, type: type, title: "Index out of range")
        case let .invalid(failure):
            return HTTPError(.unprocessableContent, detail: message, type: type, title: "Invalid album",
                             errors: failure.errors.map { .init(field: $0.field, message: $0.message) })
        case .malformed:
            return HTTPError(.badRequest, detail: message, type: type, title: "Malformed request body")
        case .invalidCursor:
            return HTTPError(.badRequest, detail: message, type: type, title: "Invalid cursor")
        case .undoStackEmpty:
            return HTTPError(.conflict, detail: message, type: type, title: "Nothing to undo")
        case .undoConflict:
            return HTTPError(.conflict, detail: message, type: type, title: "Undo conflict")
        case .preconditionFailed:
            return HTTPError(.preconditionFailed, detail: message, type: type, title: "Album changed")
        case let .archiveInvalid(problems):
            return HTTPError(.unprocessableContent, detail: message, type: type, title: "Invalid archive",
                             errors: problems.map { .init(field: $0.path, message: $0.message) })
        case .versionAhead:
            // Only `GET /changes?since=` can ask for a version: a bad query parameter, 400.
            return QueryParameters.invalid("since", message + ".")
        case .changesExpired:
            return HTTPError(.gone, detail: message, type: type, title: "Changes no longer available")
        case .libraryNotFound:
            return HTTPError(.notFound, detail: message, type: type, title: "Library not found")
        case .viewNotFound:
            return HTTPError(.notFound, detail: message, type: type, title: "View not found")
        case .conflict:
            return HTTPError(.conflict, detail: message, type: type, title: "Conflict")
        case .walkExpired:
            return HTTPError(.gone, detail: message, type: type, title: "Walk can no longer continue")
        case .writeTimedOut:
            return HTTPError(.serviceUnavailable, detail: message, type: type, title: "Write took too long",
                             headers: ["Retry-After": "1"])
        case .storage, .outputFailed:
            return nil
        }
    }

    /// This refusal as the route that made the call frames its request, the error to throw in
    /// its place: `invalidTitle` titles a 422 for an invalid value after what the request
    /// defines (`Invalid library`; the domain's title names an album, its most common case);
    /// `field` names the request value (a body field, a query parameter) that named a resource
    /// that does not exist, which makes that 404 a bad value in a valid request: 422 naming the
    /// field. A storage failure is returned as it is.
    func inContext(invalidTitle: String? = nil, field: String? = nil) -> any Error {
        guard var problem else { return self }
        if let invalidTitle, case .invalid = self { problem.title = invalidTitle }
        if let field, problem.status == .notFound {
            problem.status = .unprocessableContent
            problem.errors = [.init(field: field, message: problem.detail)]
        }
        return problem
    }

    /// What the log says about `error`: a storage failure's cause (which the client never sees).
    static func logDescription(of error: any Error) -> String {
        if let error = error as? LibraryError, case let .storage(underlying) = error { return "storage: \(underlying)" }
        return String(describing: error)
    }

    /// 507 Insufficient Storage (RFC 4918 §11.5): the write was not made because the server's
    /// disk is full; nothing about the request is wrong, and it may be repeated once space is
    /// freed (writes resume by themselves).
    static let diskFullProblem = HTTPError(
        HTTPStatus(code: 507, reasonPhrase: "Insufficient Storage"),
        detail: "The server's disk is full, so this change was not saved. Reading still works; "
            + "repeat the request once the operator has freed space (writes resume by themselves).",
        type: "urn:bluelibrary:problem:disk-full", title: "Server disk full",
        headers: ["Retry-After": "60"])
}

extension BodyError: HTTPResponseError {
    /// A refused body is answered as the domain's refusal of it (`LibraryError.init(_:)`).
    public var problem: HTTPError? { LibraryError(self).problem }
}
