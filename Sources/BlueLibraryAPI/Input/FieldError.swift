/// One problem with one input field, phrased so the user knows what to send instead.
///
/// `field` is the path of the field as the user wrote it (`year`, `albums[3].year`);
/// `message` is a full sentence that starts with that path.
public struct FieldError: Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
    public var field: String
    public var message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { message }
}
