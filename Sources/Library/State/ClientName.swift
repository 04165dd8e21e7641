import BlueLibraryAPI

/// Rules for client names in `?client=`: 1…100 characters of letters, digits, `.`, `_`, `-`.
///
/// Restricted so a name is safe in URLs, logs and storage keys without escaping.
public enum ClientName {
    /// The client a request acts for when it names none.
    public static let `default` = "default"
    public static let maximumLength = 100

    /// - Throws: `LibraryError.invalid` with a `client` field error.
    public static func validate(_ name: String) throws(LibraryError) {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        guard !name.isEmpty, name.utf8.count <= maximumLength, allowed else {
            throw .invalid(ValidationFailure([FieldError(
                field: "client",
                message: "client must be 1 to \(maximumLength) letters, digits, '.', '_' or '-' (got \"\(name)\")")]))
        }
    }
}
