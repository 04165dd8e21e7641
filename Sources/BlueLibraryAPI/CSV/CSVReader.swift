/// One record of a CSV file: its fields, and the physical line it starts on (1-based), for
/// errors to name. A record whose quoted field holds line breaks spans several lines; the next
/// record's line counts them.
public struct CSVRecord: Sendable, Equatable {
    public var line: Int
    public var fields: [String]

    public init(line: Int, fields: [String]) {
        self.line = line
        self.fields = fields
    }
}

/// Reads CSV (RFC 4180) from UTF-8 bytes one record at a time, as spreadsheets write it.
///
/// What it accepts beyond the RFC, because spreadsheets and editors write it: a UTF-8 byte
/// order mark at the start (skipped; Excel writes one), and lines ended by LF or a lone CR (old
/// Mac exports) as well as CRLF. No record follows the last line end, so a file ending in one
/// has no trailing empty record; an empty line elsewhere is a record of one empty field (a
/// caller skips it if it likes). Line breaks inside a quoted field are kept as they are.
///
/// What it refuses, with the line and character where it went wrong (`CSVSyntaxError`): a
/// double quote in a field that does not start with one, anything but a comma or a line end
/// after a closing quote, a quoted field still open at the end, and bytes that are not UTF-8.
/// Reading stops at the first such error (`next()` returns `nil` after it): past a stray quote
/// the split into fields is a guess.
///
/// Time is linear in the input: each byte is looked at a fixed number of times and each field
/// is copied once into its `String`. Memory is the input plus one record.
public struct CSVReader: Sendable {
    private let bytes: [UInt8]
    private var cursor: Cursor

    /// Where the next record starts, and the physical line there.
    struct Cursor {
        var position: Int
        /// 1-based number of the line `position` is on.
        var line: Int
        /// Offset of that line's first byte.
        var lineStart: Int
    }

    public init(_ bytes: [UInt8]) {
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        self.bytes = bytes
        self.cursor = Cursor(position: start, line: 1, lineStart: start)
    }

    /// All records of `bytes`.
    public static func records(_ bytes: [UInt8]) throws(CSVSyntaxError) -> [CSVRecord] {
        var reader = CSVReader(bytes)
        var records: [CSVRecord] = []
        while let record = try reader.next() { records.append(record) }
        return records
    }

    /// The next record, or `nil` at the end of the input (and after an error).
    public mutating func next() throws(CSVSyntaxError) -> CSVRecord? {
        guard cursor.position < bytes.count else { return nil }
        // Work on copies so that reading the array and moving the cursor do not overlap.
        let bytes = self.bytes
        var cursor = self.cursor
        let result = bytes.withUnsafeBufferPointer { input in
            Result { () throws(CSVSyntaxError) in try CSVRecordScanner.fields(in: input, cursor: &cursor) }
        }
        switch result {
        case .success(let fields):
            let record = CSVRecord(line: self.cursor.line, fields: fields)
            self.cursor = cursor
            return record
        case .failure(let error):
            self.cursor.position = bytes.count
            throw error
        }
    }
}
