/// Why bytes are not CSV, and where: the 1-based physical line and the 1-based character
/// (Unicode scalar) position in that line, so a user can find the spot in any text editor.
public struct CSVSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// `a"b`: a double quote in a field that does not start with one (at the quote).
        case quoteInUnquotedField
        /// `"a"b`: something other than a comma or a line end after a closing quote (at that byte).
        case textAfterClosingQuote
        /// `"a…` to the end of the input (at the opening quote).
        case unterminatedQuotedField
        /// Bytes that are not UTF-8 (at the first bad byte).
        case invalidUTF8
    }

    public var kind: Kind
    public var line: Int
    public var column: Int

    public init(_ kind: Kind, line: Int, column: Int) {
        self.kind = kind
        self.line = line
        self.column = column
    }

    /// A sentence saying what is wrong and what to write instead (without the line).
    public var message: String {
        switch kind {
        case .quoteInUnquotedField:
            "a double quote at character \(column) is inside a field that does not start with one;"
                + " enclose the whole field in double quotes and double each quote inside it"
        case .textAfterClosingQuote:
            "character \(column) follows the closing quote of a field; after a quoted field only a comma"
                + " or the end of the line may come (a quote inside a quoted field is written twice)"
        case .unterminatedQuotedField:
            "the quoted field that opens at character \(column) is never closed; add the closing double quote"
        case .invalidUTF8:
            "character \(column) is not UTF-8; save the file as UTF-8"
        }
    }

    public var description: String { "line \(line): \(message)" }
}
