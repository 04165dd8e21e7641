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

    /// A whole number within `range`, else 400.
    func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let value = text(name) else { return nil }
        guard value.utf8.count <= 20, let number = Int(value), range.contains(number) else {
            throw Self.invalid(name, "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(Self.quoted(value))'.")
        }
        return number
    }

    /// A non-negative whole number (an index or a version) written in decimal digits only.
    func index(_ name: String) throws -> Int? {
        guard let value = text(name) else { return nil }
        guard !value.isEmpty, value.utf8.count <= 18, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(value) else {
            throw Self.invalid(name, "\(name) must be a non-negative whole number like 0 or 3, not '\(Self.quoted(value))'.")
        }
        return number
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
