import Essentials
import HTTPServer
import Library
import Storage

extension LibraryError {
    /// The one place where a domain refusal gets its HTTP status (API.md conventions).
    var httpError: HTTPError {
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
        case .storage, .outputFailed:
            return HTTPError(.internalServerError, detail: message, type: type, title: "Storage failure")
        }
    }
}

/// Runs a facade call, turning its `LibraryError` into the matching problem response. Storage
/// failures keep their cause for the log (the client sees only the generic sentence).
func library<T>(_ body: () throws(LibraryError) -> T) throws -> T {
    do {
        return try body()
    } catch {
        switch error {
        case let .storage(underlying) where underlying.error is QueryInterrupted:
            // A read stopped by its time limit or its client leaving: 503 or 499, not a failure.
            throw underlying.error
        case .storage, .outputFailed: throw StorageFailure(error: error)  // 500 without internals, logged
        default: break
        }
        throw error.httpError
    }
}

/// A storage error on its way to the error renderer, which logs it with the request id and
/// answers a 500 that shows no internals.
struct StorageFailure: Error, CustomStringConvertible {
    let error: LibraryError
    var description: String {
        if case let .storage(underlying) = error { return "storage: \(underlying)" }
        return error.message
    }

    /// 507 Insufficient Storage (RFC 4918 §11.5): the write was not made because the server's
    /// disk is full; nothing about the request is wrong, and it may be repeated once space is
    /// freed (writes resume by themselves).
    static let diskFullError = HTTPError(
        HTTPStatus(code: 507, reasonPhrase: "Insufficient Storage"),
        detail: "The server's disk is full, so this change was not saved. Reading still works; "
            + "repeat the request once the operator has freed space (writes resume by themselves).",
        type: "urn:bluelibrary:problem:disk-full", title: "Server disk full",
        headers: ["Retry-After": "60"])
}
