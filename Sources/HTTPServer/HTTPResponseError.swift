/// An error of a layer below HTTP that knows the problem it is answered with, so handlers can
/// throw it as it is and the ``ErrorRenderer`` turns it into a response in one place.
public protocol HTTPResponseError: Error {
    /// The problem this error is answered with; nil when it is a failure of the server rather
    /// than a refusal of the request (the renderer then hands it to its `unhandled` closure,
    /// which logs it and answers without internals).
    var problem: HTTPError? { get }
}
