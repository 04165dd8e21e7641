/// Why a request body was refused, before any domain rule ran: the JSON is not what the
/// contract describes. The domain (`LibraryError`) and the server (its problem JSON) take it as
/// it is: `malformed` is 400, `invalid` 422 naming every bad field, a negative position 400.
public enum BodyError: Error, Sendable, Equatable {
    /// Not JSON, empty, or not the kind of value the body must be; says what is wrong and how to fix it.
    case malformed(String)
    /// Well-formed, but fields break the rules; each one is named.
    case invalid(ValidationFailure)
    /// A position below 0 (`index`).
    case negativeIndex(Int)
}
