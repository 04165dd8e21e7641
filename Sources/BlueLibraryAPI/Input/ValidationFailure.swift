/// Every problem found in one piece of input, reported together.
///
/// Rule: validation never stops at the first bad field. A curl user fixing a request should
/// see all the fields to fix in one response, not discover them one round trip at a time.
public struct ValidationFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The problems, in the order the fields were checked; never empty when thrown.
    public var errors: [FieldError]

    public init(_ errors: [FieldError]) {
        self.errors = errors
    }

    /// The fields that have a problem, in order (a field appears once per problem).
    public var fields: [String] { errors.map(\.field) }

    /// All messages joined into one line.
    public var description: String {
        errors.map(\.message).joined(separator: "; ")
    }
}
