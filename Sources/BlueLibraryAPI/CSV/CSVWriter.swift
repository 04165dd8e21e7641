/// One cell of a CSV row: text the user wrote, a number the writer makes, or nothing.
public enum CSVCell: Sendable, Hashable {
    case text(String)
    case number(Int)
    case empty

    /// `text`, or an empty cell for `nil`.
    public static func text(_ value: String?) -> CSVCell {
        value.map(CSVCell.text) ?? .empty
    }

    /// `number`, or an empty cell for `nil`.
    public static func number(_ value: Int?) -> CSVCell {
        value.map(CSVCell.number) ?? .empty
    }
}

/// Writes CSV (RFC 4180, <https://www.rfc-editor.org/rfc/rfc4180>) as UTF-8 bytes, without a
/// byte order mark: cells separated by `,`, every row ended by CRLF.
///
/// Quoting rule: a text cell is enclosed in double quotes when it contains a comma, a double
/// quote, CR or LF, and each double quote inside it is doubled (`say "hi"` → `"say ""hi"""`);
/// any other cell is written as it is. So a cell's text comes back unchanged from any RFC 4180
/// reader, `CSVReader` included.
///
/// Formula rule (OWASP's "CSV Injection" guidance): a spreadsheet runs a cell that starts with
/// `=`, `+`, `-` or `@` as a formula, and one that starts with a tab (0x09) or CR (0x0D) after
/// dropping it — so a title like `=HYPERLINK(…)` in a library could run in whoever opens the
/// export. A text cell that starts with one of those six characters is therefore written with a
/// single quote `'` before it (`=SUM(1)` → `'=SUM(1)`, `-1` → `'-1`), which spreadsheets show as
/// text; the quoting rule then applies to the prefixed text (a text starting with CR is written
/// `"'<CR>…"`). The prefix is not removed on reading: the file says what a spreadsheet shows.
/// Numbers the writer makes itself (`CSVCell.number`: an album's index or year) are not text and
/// are never prefixed, so `-1` written as a number stays `-1`. An empty cell is written as
/// nothing.
///
/// Use a value to build a small document, or the static `append` functions to write cells into a
/// buffer of one's own (the album export streams a million rows through one reused buffer).
public struct CSVWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]
    /// Whether the next cell starts a row (it then needs no separator before it).
    private var atRowStart = true

    /// A writer that appends to `bytes` (empty by default).
    public init(bytes: [UInt8] = []) {
        self.bytes = bytes
    }

    /// Appends one cell to the current row.
    public mutating func append(_ cell: CSVCell) {
        if !atRowStart { bytes.append(Self.separator) }
        atRowStart = false
        switch cell {
        case .text(let text): Self.appendText(text, to: &bytes)
        case .number(let number): Self.appendNumber(number, to: &bytes)
        case .empty: break
        }
    }

    /// Ends the current row with CRLF. A row of no cells is an empty line.
    public mutating func endRow() {
        Self.appendLineEnd(to: &bytes)
        atRowStart = true
    }

    /// Appends `cells` as one whole row, line end included.
    public mutating func appendRow(_ cells: some Sequence<CSVCell>) {
        for cell in cells { append(cell) }
        endRow()
    }

    /// The byte between two cells of a row.
    public static let separator = UInt8(ascii: ",")

    /// Appends CRLF, the end of every row.
    public static func appendLineEnd(to buffer: inout [UInt8]) {
        buffer.append(0x0D)
        buffer.append(0x0A)
    }

    /// Appends `value` as a number cell: decimal digits, `-` before a negative number, never
    /// prefixed or quoted.
    public static func appendNumber(_ value: Int, to buffer: inout [UInt8]) {
        if value < 0 { buffer.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        guard magnitude >= 10 else {
            buffer.append(UInt8(ascii: "0") + UInt8(magnitude))
            return
        }
        // Digits are found from the last; write them into place instead of making a String.
        var width = 1
        var rest = magnitude / 10
        while rest > 0 {
            width += 1
            rest /= 10
        }
        let start = buffer.count
        buffer.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width))
        var position = start + width - 1
        while magnitude > 0 {
            buffer[position] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
            position -= 1
        }
    }

    /// Appends `text` as a text cell, by the formula and quoting rules (see the type); nothing
    /// for an empty text.
    public static func appendText(_ text: String, to buffer: inout [UInt8]) {
        var text = text
        text.withUTF8 { appendText(utf8: $0, to: &buffer) }
    }

    /// `appendText` of UTF-8 bytes (written as they are).
    static func appendText(utf8 text: UnsafeBufferPointer<UInt8>, to buffer: inout [UInt8]) {
        guard let first = text.first else { return }
        let prefixed = startsFormula(first)
        guard needsQuotes(text) else {
            if prefixed { buffer.append(UInt8(ascii: "'")) }
            buffer.append(contentsOf: text)
            return
        }
        buffer.append(quote)
        if prefixed { buffer.append(UInt8(ascii: "'")) }
        // Copy the runs between quotes whole, doubling each quote.
        var runStart = 0
        for index in text.indices where text[index] == quote {
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: text[runStart...index]))
            buffer.append(quote)
            runStart = index + 1
        }
        buffer.append(contentsOf: UnsafeBufferPointer(rebasing: text[runStart...]))
        buffer.append(quote)
    }

    /// Whether a text cell starting with `byte` gets the `'` prefix: `=`, `+`, `-`, `@`, tab, CR.
    public static func startsFormula(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "@"), 0x09, 0x0D: true
        default: false
        }
    }

    private static let quote = UInt8(ascii: "\"")

    /// Whether `text` holds a comma, a double quote, CR or LF.
    private static func needsQuotes(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in text {
            switch byte {
            case separator, quote, 0x0D, 0x0A: return true
            default: continue
            }
        }
        return false
    }
}
