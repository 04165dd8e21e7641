import Foundation

/// The two JSON readers side by side, for the differential fuzz target in `Fuzz/`: the
/// archive's `JSONScanner` and `JSONSerialization` (request bodies), each reduced to the values
/// the field rules see. Not API: reached only with `@_spi(Fuzzing) import BlueLibraryAPI`.
@_spi(Fuzzing) public enum JSONFuzzingSeam {
    /// A whole JSON document; numbers as `JSONNumber` holds them.
    public indirect enum Value: Equatable, Sendable {
        case null
        case bool(Bool)
        case number(double: Double, integer: Int?)
        case string(String)
        case array([Value])
        /// Members: from the scanner in document order, duplicates kept; from
        /// `JSONSerialization` in no particular order, one per key.
        case object([Member])
    }

    public struct Member: Equatable, Sendable {
        public var key: String
        public var value: Value

        public init(key: String, value: Value) {
            self.key = key
            self.value = value
        }
    }

    public struct SyntaxError: Error, CustomStringConvertible {
        public var description: String
    }

    /// `JSONScanner`'s reading of the whole document (any top-level value, nothing after it).
    public static func scan(_ bytes: [UInt8]) throws(SyntaxError) -> Value {
        let result = bytes.withUnsafeBufferPointer { buffer -> Result<Value, JSONSyntaxError> in
            var scanner = JSONScanner(buffer)
            do throws(JSONSyntaxError) {
                let value = try read(&scanner)
                try scanner.finish()
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case let .success(value): return value
        case let .failure(error): throw SyntaxError(description: error.description)
        }
    }

    /// What `JSONSerialization` (with fragments allowed, as request bodies are read) made of
    /// the document, scalars turned into field values the way the request rules do.
    public static func serialization(_ bytes: [UInt8]) throws -> Value {
        value(of: try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]))
    }

    private static func read(_ scanner: inout JSONScanner) throws(JSONSyntaxError) -> Value {
        switch try scanner.peekKind() {
        case .object:
            try scanner.beginObject()
            var members: [Member] = []
            while let key = try scanner.nextKey() { members.append(Member(key: key, value: try read(&scanner))) }
            return .object(members)
        case .array:
            try scanner.beginArray()
            var elements: [Value] = []
            while try scanner.nextElement() { elements.append(try read(&scanner)) }
            return .array(elements)
        case .string, .number, .bool, .null:
            return scalar(try scanner.readValue())
        }
    }

    private static func value(of any: Any) -> Value {
        switch any {
        case let dictionary as [String: Any]:
            // In the dictionary's order, which is none: compare by key.
            return .object(dictionary.map { Member(key: $0.key, value: value(of: $0.value)) })
        case let array as [Any]:
            return .array(array.map(value(of:)))
        default:
            return scalar(JSONValueKind.fieldValue(any))
        }
    }

    private static func scalar(_ field: JSONFieldValue) -> Value {
        switch field {
        case .null: .null
        case let .bool(flag): .bool(flag)
        case let .number(number): .number(double: number.double, integer: number.integer)
        case let .string(text): .string(text)
        case .array: .array([])  // not reached: containers are read member by member
        case .object: .object([])
        }
    }
}
