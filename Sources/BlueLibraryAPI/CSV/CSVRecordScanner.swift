/// The byte loop of `CSVReader`: one record's fields from a cursor, and where errors are.
enum CSVRecordScanner {
    private static let quote = UInt8(ascii: "\"")
    private static let comma = UInt8(ascii: ",")
    private static let cr: UInt8 = 0x0D
    private static let lf: UInt8 = 0x0A

    /// The fields of the record at `cursor`, which then moves past its line end.
    static func fields(in input: UnsafeBufferPointer<UInt8>, cursor: inout CSVReader.Cursor) throws(CSVSyntaxError) -> [String] {
        var fields: [String] = []
        var index = cursor.position
        let end = input.count
        while true {
            let field: String
            if index < end && input[index] == quote {
                field = try quotedField(in: input, at: &index, cursor: &cursor)
            } else {
                let start = index
                while index < end {
                    let byte = input[index]
                    if byte == comma || byte == cr || byte == lf { break }
                    if byte == quote {
                        throw error(.quoteInUnquotedField, at: index, in: input, from: cursor.lineStart, line: cursor.line)
                    }
                    index += 1
                }
                field = try string(input, start..<index, cursor: cursor)
            }
            fields.append(field)
            guard index < end else {
                cursor.position = end
                return fields
            }
            let byte = input[index]
            index += 1
            if byte == comma { continue }
            if byte == cr && index < end && input[index] == lf { index += 1 }
            cursor.line += 1
            cursor.lineStart = index
            cursor.position = index
            return fields
        }
    }

    /// The quoted field whose opening quote is at `index`; `index` moves past its closing quote.
    /// Line breaks inside it move the cursor's line.
    private static func quotedField(
        in input: UnsafeBufferPointer<UInt8>, at index: inout Int, cursor: inout CSVReader.Cursor
    ) throws(CSVSyntaxError) -> String {
        let opening = index
        let start = cursor
        let end = input.count
        index += 1
        var runStart = index
        // Only a field with a doubled quote needs a copy of its own; others are one run.
        var unescaped: [UInt8] = []
        var hasDoubledQuote = false
        while true {
            guard index < end else {
                throw error(.unterminatedQuotedField, at: opening, in: input, from: start.lineStart, line: start.line)
            }
            let byte = input[index]
            if byte == quote {
                guard index + 1 < end, input[index + 1] == quote else { break }
                unescaped.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart...index]))
                hasDoubledQuote = true
                index += 2
                runStart = index
                continue
            }
            if byte == lf || (byte == cr && !(index + 1 < end && input[index + 1] == lf)) {
                cursor.line += 1
                cursor.lineStart = index + 1
            }
            index += 1
        }
        let closing = index
        index += 1
        if index < end, input[index] != comma, input[index] != cr, input[index] != lf {
            throw error(.textAfterClosingQuote, at: index, in: input, from: cursor.lineStart, line: cursor.line)
        }
        guard hasDoubledQuote else {
            return try string(input, opening + 1..<closing, cursor: start)
        }
        unescaped.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<closing]))
        if let text = String(validating: unescaped, as: UTF8.self) { return text }
        // The copy differs from the input only by dropped quotes, so the first bad byte of the
        // input's range is the one.
        throw invalidUTF8(input, opening + 1..<closing, cursor: start)
    }

    /// The text of `range`, which starts on the cursor's line.
    private static func string(
        _ input: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, cursor: CSVReader.Cursor
    ) throws(CSVSyntaxError) -> String {
        if range.isEmpty { return "" }
        let bytes = UnsafeBufferPointer(rebasing: input[range])
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        throw invalidUTF8(input, range, cursor: cursor)
    }

    /// The error at the first byte of `range` that is not UTF-8.
    private static func invalidUTF8(_ input: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, cursor: CSVReader.Cursor) -> CSVSyntaxError {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = UnsafeBufferPointer(rebasing: input[range]).makeIterator()
        var offset = range.lowerBound
        scanning: while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .error, .emptyInput: break scanning
            }
        }
        return error(.invalidUTF8, at: min(offset, range.upperBound), in: input, from: cursor.lineStart, line: cursor.line)
    }

    /// The error of `kind` at byte `offset`, counting line breaks from `lineStart` (the start of
    /// line `line`) and characters from the start of the offset's line.
    private static func error(
        _ kind: CSVSyntaxError.Kind, at offset: Int, in input: UnsafeBufferPointer<UInt8>, from lineStart: Int, line: Int
    ) -> CSVSyntaxError {
        var line = line
        var lineStart = lineStart
        var index = lineStart
        while index < offset {
            let byte = input[index]
            if byte == lf || (byte == cr && !(index + 1 < input.count && input[index + 1] == lf)) {
                line += 1
                lineStart = index + 1
            }
            index += 1
        }
        // A character is a scalar: every byte but UTF-8's continuation bytes (10xxxxxx) starts one.
        let column = 1 + input[lineStart..<offset].count { $0 & 0xC0 != 0x80 }
        return CSVSyntaxError(kind, line: line, column: column)
    }
}
