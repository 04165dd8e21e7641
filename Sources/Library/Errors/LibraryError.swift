import BlueLibraryAPI

/// Everything the domain can refuse, each with a message that tells the user what to do.
///
/// A closed set, so a flat enum: the HTTP layer maps each case to a status in one place
/// (there are no HTTP statuses here). `code` is a payload-free name for logs and metrics.
public enum LibraryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No album has this id (in this library).
    case notFound(AlbumID)
    /// Text that should be an album id is not one.
    case invalidAlbumID(String)
    /// An index outside the valid positions (`0..<count`, or `0...count` to insert).
    case indexOutOfRange(index: Int, count: Int)
    /// Input fields break the rules; every problem is listed.
    case invalid(ValidationFailure)
    /// Input is not parseable at all (bad JSON syntax, wrong top-level shape).
    case malformed(String)
    /// A paging cursor that is malformed, edited, or from another query.
    case invalidCursor(String)
    /// `undo` was called with nothing to undo.
    case undoStackEmpty
    /// The newest undo command no longer fits the library (should not happen while every
    /// mutation goes through the facade).
    case undoConflict(String)
    /// The caller's `If-Match` condition did not hold for the album's current value.
    case preconditionFailed(AlbumID)
    /// An archive document cannot be imported; nothing was changed.
    case archiveInvalid([ArchiveProblem])
    /// The store failed (I/O, constraint, corruption). Details are for logs only.
    case storage(UnderlyingError)
    /// Writing exported bytes failed (e.g. the client went away); the export stopped.
    case outputFailed(UnderlyingError)
    /// The change feed no longer holds every change after `since` (pruned): the client must
    /// reload everything.
    case changesExpired(since: Int64, oldest: Int64, current: Int64)
    /// `since` is newer than the library's current version: a version this library never gave
    /// out (the client mixed up libraries or servers). The client's mistake, not a reason to
    /// reload everything.
    case versionAhead(since: Int64, current: Int64)
    /// No library has this id.
    case libraryNotFound(LibraryID)
    /// No view has this id.
    case viewNotFound(ViewID)
    /// The request conflicts with what exists (an id that is taken, a non-empty library deleted
    /// without `force`, an album id another library holds); the message says what to do.
    case conflict(String)
    /// A cursor walk can no longer be continued exactly (the changes since it started are no
    /// longer kept, or a source was replaced); the message says why. Start again.
    case walkExpired(String)
    /// A write ran longer in the writer than the server allows (a large batch on a slow
    /// database); it was rolled back. The message says what to do.
    case writeTimedOut(String)

    /// A stable, payload-free name for logs, metrics and problem `type` URIs.
    public var code: String {
        switch self {
        case .notFound: "not-found"
        case .invalidAlbumID: "invalid-album-id"
        case .indexOutOfRange: "index-out-of-range"
        case .invalid: "invalid"
        case .malformed: "malformed"
        case .invalidCursor: "invalid-cursor"
        case .undoStackEmpty: "undo-stack-empty"
        case .undoConflict: "undo-conflict"
        case .preconditionFailed: "precondition-failed"
        case .archiveInvalid: "archive-invalid"
        case .storage: "storage"
        case .outputFailed: "output-failed"
        case .changesExpired: "changes-expired"
        case .versionAhead: "version-ahead"
        case .libraryNotFound: "library-not-found"
        case .viewNotFound: "view-not-found"
        case .conflict: "conflict"
        case .walkExpired: "walk-expired"
        case .writeTimedOut: "write-timed-out"
        }
    }

    /// A sentence for the user: what went wrong and what to do about it.
    public var message: String {
        switch self {
        case .notFound(let id):
            return "no album has id \(id); list the albums with GET /albums to find valid ids"
        case .invalidAlbumID(let text):
            return "\"\(text)\" is not an album id; ids are 26 characters of Crockford base32 like 01HZY8Q6V9T3X2K7M4N5P6R7S8"
        case .indexOutOfRange(let index, let count):
            if index < 0 {
                return "index \(index) is negative; indexes start at 0"
            }
            if count == 0 {
                return "index \(index) is out of range: the library is empty"
            }
            return "index \(index) is out of range: the library has \(count) album\(count == 1 ? "" : "s"), so use 0 to \(count - 1)"
        case .invalid(let failure):
            return failure.description
        case .malformed(let detail):
            return detail
        case .invalidCursor(let detail):
            return detail
        case .undoStackEmpty:
            return "there is nothing to undo"
        case .undoConflict(let detail):
            return "the last change cannot be undone: \(detail)"
        case .preconditionFailed(let id):
            return "album \(id) has changed since you read it; fetch it again and retry with its current ETag"
        case .archiveInvalid(let problems):
            let shown = problems.prefix(5).map(\.message).joined(separator: "; ")
            let more = problems.count > 5 ? " (and \(problems.count - 5) more problems)" : ""
            return "the archive cannot be imported and nothing was changed: \(shown)\(more)"
        case .storage:
            return "the library could not be read or written; try again later"
        case .outputFailed:
            return "the export stopped because its output could not be written"
        case .changesExpired(let since, let oldest, _):
            return "changes since version \(since) are no longer kept (the oldest usable since is \(oldest)); reload everything, then ask for changes since the version you loaded"
        case .versionAhead(let since, let current):
            return "since (\(since)) is newer than the library's current version \(current); send a version this library gave you (0 to start over)"
        case .libraryNotFound(let id):
            return "no library has id \"\(id)\"; list the libraries with GET /libraries"
        case .viewNotFound(let id):
            return "no view has id \"\(id)\"; list the views with GET /views"
        case .conflict(let detail):
            return detail
        case .walkExpired(let detail), .writeTimedOut(let detail):
            return detail
        }
    }

    public var description: String { message }
}

extension LibraryError {
    /// A refused request body as the domain's refusal (the same problem as before the wire
    /// module read bodies: `malformed` 400, `invalid` 422, a negative index 400).
    public init(_ error: BodyError) {
        switch error {
        case let .malformed(message): self = .malformed(message)
        case let .invalid(failure): self = .invalid(failure)
        case let .negativeIndex(index): self = .indexOutOfRange(index: index, count: 0)
        }
    }

    /// Runs `body`, a reading of the wire module, with a refused body as the domain's refusal.
    public static func reading<T>(_ body: () throws(BodyError) -> T) throws(LibraryError) -> T {
        do {
            return try body()
        } catch {
            throw LibraryError(error)
        }
    }
}
