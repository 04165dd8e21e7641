import BlueLibraryAPI
import HTTPServer
import Library

/// The one place where query parameters are read, so that every route answers a bad value the
/// same way: 400 `urn:bluelibrary:problem:invalid-query-parameter`, titled "Invalid query
/// parameter", whose `detail` and single `errors` entry name the parameter. Unknown parameters
/// are ignored; a parameter given twice counts with its first value.
struct QueryParameters {
    let request: HTTPRequest

    init(_ request: HTTPRequest) {
        self.request = request
    }

    static let problemType = "urn:bluelibrary:problem:invalid-query-parameter"

    /// The 400 for a bad `name`; `message` starts with the parameter's name.
    static func invalid(_ name: String, _ message: String) -> HTTPError {
        HTTPError(.badRequest, detail: message, type: problemType, title: "Invalid query parameter",
                  errors: [.init(field: name, message: message)])
    }

    /// The raw value (percent-decoded), nil when absent.
    func text(_ name: String) -> String? {
        request.query(name)
    }

    /// Every value of a repeated parameter, in order.
    func texts(_ name: String) -> [String] {
        request.queryItems.filter { $0.name == name }.map(\.value)
    }

    /// `true` or `false`; a bare `?name` (empty value) is `true`. Anything else is 400.
    func boolean(_ name: String) throws -> Bool? {
        guard let value = text(name) else { return nil }
        switch value {
        case "true", "": return true
        case "false": return false
        default: throw Self.invalid(name, "\(name) must be true or false, not '\(Self.quoted(value))'.")
        }
    }

    /// A whole number within `range`, else 400 naming the parameter and the range. Query
    /// integers are text: decimal digits, with a leading `-` only (no `+`, fraction, exponent
    /// or spaces); a number too large for 64 bits is out of range like any other.
    func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let value = text(name) else { return nil }
        guard let number = Self.decimal(value), range.contains(number) else {
            throw Self.invalid(name, "\(name) must be \(IntegerRules.wholeNumber(range)), not '\(Self.quoted(value))'.")
        }
        return number
    }

    /// A position (`index`): a whole number in `IntegerRules.positions`.
    func index(_ name: String) throws -> Int? {
        try integer(name, in: IntegerRules.positions)
    }

    /// `text` as a decimal integer (`-?[0-9]+`), nil for any other text or beyond 64 bits.
    static func decimal(_ text: String) -> Int? {
        let digits = text.utf8.first == UInt8(ascii: "-") ? text.utf8.dropFirst() : text.utf8[...]
        guard !digits.isEmpty, digits.count <= 20, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    /// A value read by a domain parser: its failure (a validation error or an HTTP error) becomes
    /// this parameter's 400, with the parser's message.
    func parsed<T>(_ name: String, _ parse: (String) throws -> T) throws -> T? {
        guard let value = text(name) else { return nil }
        do {
            return try parse(value)
        } catch let error as LibraryError {
            throw Self.invalid(name, error.message)
        } catch let error as HTTPError {
            throw Self.invalid(name, error.detail)
        }
    }

    /// At most 60 characters of a value, for a detail.
    static func quoted(_ value: String) -> String {
        value.count > 60 ? String(value.prefix(60)) + "…" : value
    }
}
