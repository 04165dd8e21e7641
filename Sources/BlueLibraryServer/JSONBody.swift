import Essentials
import Foundation
import HTTPServer
import Library

/// JSON responses: UTF-8, sorted keys (stable bytes, stable ETags), a final newline, and
/// pretty printing on `?pretty`.
enum JSONBody {
    static func encode<T: Encodable>(_ value: T, pretty: Bool = false) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Timestamp.format(date))
        }
        var bytes = Array(try encoder.encode(value))
        bytes.append(0x0A)
        return bytes
    }

    static func response<T: Encodable>(
        _ value: T, status: HTTPStatus = .ok, pretty: Bool = false, headers: HTTPHeaders = HTTPHeaders()
    ) throws -> HTTPResponse {
        let bytes = try encode(value, pretty: pretty)
        var headers = headers
        if !headers.contains("ETag") { headers.set("ETag", ETag.strong(for: bytes)) }
        return HTTPResponse(status: status, contentType: "application/json", bytes: bytes, headers: headers)
    }
}

extension HTTPRequest {
    /// `?pretty` (any value but `false`/`0`) asks for indented JSON.
    var wantsPretty: Bool {
        guard let value = QueryParameters(self).text("pretty") else { return false }
        return value != "false" && value != "0"
    }
}
