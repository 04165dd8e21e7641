/// One problem with a CSV file being imported: the physical line it is on (1-based; the
/// header's line for a header problem), the column it is in when there is one (named as the
/// header writes it, without surrounding whitespace), and a sentence saying what to change.
/// A cell's `message` starts with its column's name (`Title must be at most 500 characters…`).
public struct CSVImportError: Error, Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: String?
    public var message: String

    public init(line: Int, column: String?, message: String) {
        self.line = line
        self.column = column
        self.message = message
    }

    /// A file that is not CSV: the line of the syntax error, no column.
    public init(_ error: CSVSyntaxError) {
        self.init(line: error.line, column: nil, message: error.message)
    }

    public var description: String { "line \(line): \(message)" }
}

/// Why an import took nothing: every problem found, in file order, up to a limit.
///
/// Rule: an import is all or nothing, and it reports every problem it finds rather than the
/// first, so a user fixes the file in one go instead of one upload per mistake. The list is cut
/// at a limit (a file of the wrong kind would give a problem per line); `hasMoreErrors` then
/// says there are more.
public struct CSVImportFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Never empty when thrown.
    public var errors: [CSVImportError]
    /// Whether the file has problems beyond `errors` (the list reached its limit).
    public var hasMoreErrors: Bool

    public init(errors: [CSVImportError], hasMoreErrors: Bool = false) {
        self.errors = errors
        self.hasMoreErrors = hasMoreErrors
    }

    /// One problem per line.
    public var description: String {
        (errors.map(\.description) + (hasMoreErrors ? ["(and more)"] : [])).joined(separator: "\n")
    }
}
