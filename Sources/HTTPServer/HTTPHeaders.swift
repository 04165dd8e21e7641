/// An ordered list of header fields. Names compare case-insensitively (RFC 9110 §5.1); the
/// list keeps the order and spelling they arrived in.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public private(set) var fields: [Field] = []

    public init() {}
    public init(_ pairs: [(String, String)]) {
        // Room for what the server and middleware add (Content-Type, X-Request-Id, ...).
        fields.reserveCapacity(pairs.count + 4)
        for (name, value) in pairs { fields.append(Field(name: name, value: value)) }
    }
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    public var count: Int { fields.count }

    public mutating func reserveCapacity(_ count: Int) { fields.reserveCapacity(count) }
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// The first value of `name`, or nil.
    public subscript(name: String) -> String? {
        for field in fields where field.name.equalsIgnoringASCIICase(name) { return field.value }
        return nil
    }

    /// Every value of `name`, in order.
    public func values(for name: String) -> [String] {
        fields.lazy.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    /// Adds a field, keeping any existing ones of that name.
    public mutating func add(_ name: String, _ value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field of that name by one.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append(Field(name: name, value: value))
    }

    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// The comma-separated tokens of a list-valued header (e.g. `Connection`), lowercased.
    public func tokens(for name: String) -> [String] {
        values(for: name).flatMap { $0.split(separator: ",") }.map {
            $0.trimmingASCIIWhitespace().lowercased()
        }
    }
}

extension String {
    /// ASCII case-insensitive equality, without allocating. (Header lookups run this for
    /// every field of every request: contiguous bytes are compared directly.)
    @inlinable
    public func equalsIgnoringASCIICase(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        let contiguous = utf8.withContiguousStorageIfAvailable { a in
            other.utf8.withContiguousStorageIfAvailable { b in
                for i in 0..<a.count where a[i] != b[i] {
                    guard Self.sameLetterIgnoringCase(a[i], b[i]) else { return false }
                }
                return true
            }
        }
        if let contiguous, let result = contiguous { return result }
        for (x, y) in zip(utf8, other.utf8) where x != y {
            guard Self.sameLetterIgnoringCase(x, y) else { return false }
        }
        return true
    }

    /// Whether two different bytes are the same ASCII letter in different cases.
    @inlinable
    static func sameLetterIgnoringCase(_ x: UInt8, _ y: UInt8) -> Bool {
        let lower = x | 0x20
        return lower == y | 0x20 && lower >= 0x61 && lower <= 0x7A
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs.
    public func trimmingASCIIWhitespace() -> String {
        let bytes = Array(utf8)
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
