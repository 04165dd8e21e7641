import Essentials

/// An error that knows the response it becomes: RFC 9457 problem details
/// (`application/problem+json`). Handlers throw it; the router turns it into a response in
/// one place, so no handler builds error bodies by hand.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    public struct FieldError: Sendable, Equatable {
        public var field: String
        public var message: String
        public init(field: String, message: String) {
            self.field = field
            self.message = message
        }
    }

    public var status: HTTPStatus
    /// A sentence that says what went wrong and what to change.
    public var detail: String
    /// A URI naming the problem type; `about:blank` when the status says it all.
    public var type: String
    /// A short, fixed summary; defaults to the reason phrase.
    public var title: String
    /// Field-level problems, for validation errors.
    public var errors: [FieldError]
    /// Headers the response must carry (`Allow` for 405, `Retry-After` for 429/503, ...).
    public var headers: HTTPHeaders

    public init(
        _ status: HTTPStatus, detail: String, type: String = "about:blank", title: String? = nil,
        errors: [FieldError] = [], headers: HTTPHeaders = HTTPHeaders()
    ) {
        self.status = status
        self.detail = detail
        self.type = type
        self.title = title ?? status.reasonPhrase
        self.errors = errors
        self.headers = headers
    }

    public var description: String { "\(status.code) \(title): \(detail)" }

    /// The problem document, one JSON object and a newline.
    public func response(instance: String? = nil) -> HTTPResponse {
        var json = JSONWriter()
        write(to: &json, instance: instance)
        json.newline()
        return HTTPResponse(status: status, contentType: "application/problem+json", bytes: json.bytes, headers: headers)
    }

    /// Writes the problem document as one JSON value (inside a larger document, such as a
    /// batch's result of one operation).
    public func write(to json: inout JSONWriter, instance: String? = nil) {
        json.beginObject()
        json.key("type"); json.string(type)
        json.key("title"); json.string(title)
        json.key("status"); json.number(status.code)
        json.key("detail"); json.string(detail)
        if let instance {
            json.key("instance"); json.string(instance)
        }
        if !errors.isEmpty {
            json.key("errors")
            json.beginArray()
            for error in errors {
                json.beginObject()
                json.key("field"); json.string(error.field)
                json.key("message"); json.string(error.message)
                json.endObject()
            }
            json.endArray()
        }
        json.endObject()
    }
}

/// A tiny forward-only JSON writer for fixed-shape documents (problem details, logs), so the
/// hot paths need no Foundation encoder. Keys and strings are escaped by Essentials' `JSONString`.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    private var needsComma = false

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public mutating func beginObject() { separate(); bytes.append(UInt8(ascii: "{")); needsComma = false }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma = true }
    public mutating func beginArray() { separate(); bytes.append(UInt8(ascii: "[")); needsComma = false }
    public mutating func endArray() { bytes.append(UInt8(ascii: "]")); needsComma = true }
    public mutating func newline() { bytes.append(0x0A) }

    public mutating func key(_ name: String) {
        separate()
        JSONString.append(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    public mutating func string(_ value: String) {
        separate()
        JSONString.append(value, to: &bytes)
        needsComma = true
    }

    public mutating func number<N: BinaryInteger>(_ value: N) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    public mutating func number(_ value: Double) {
        separate()
        bytes.append(contentsOf: (value.isFinite ? String(value) : "null").utf8)
        needsComma = true
    }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        needsComma = true
    }

    /// Appends an already-encoded JSON value.
    public mutating func raw(_ value: [UInt8]) {
        separate()
        bytes.append(contentsOf: value)
        needsComma = true
    }

    public mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
        needsComma = true
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }
}
