/// An ordered list of header fields. Names compare case-insensitively (RFC 9110 §5.1); the
/// list keeps the order and spelling they arrived in.
///
/// A request's headers stay the bytes they arrived as (``RequestHeadFields``) until a field is
/// changed or removed: lookups compare bytes, and only a value asked for as a String becomes
/// one. ``withFirstValue(_:_:)`` reads a value without making a String at all.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The fields of a request head, as bytes (nil once edited, and for built headers).
    private var received: RequestHeadFields?
    /// Fields added after `received` (all of them when `received` is nil).
    private var added: [Field] = []

    public init() {}
    public init(_ pairs: [(String, String)]) {
        // Room for what the server and middleware add (Content-Type, X-Request-Id, ...).
        added.reserveCapacity(pairs.count + 4)
        for (name, value) in pairs { added.append(Field(name: name, value: value)) }
    }
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The headers of a parsed request head.
    init(received: RequestHeadFields) {
        self.received = received
    }

    /// Every field in order, as Strings.
    public var fields: [Field] {
        guard let received else { return added }
        return received.materialized() + added
    }

    public var count: Int { (received?.count ?? 0) + added.count }

    public mutating func reserveCapacity(_ count: Int) { added.reserveCapacity(count) }
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// The first value of `name`, or nil.
    public subscript(name: String) -> String? {
        if let received, let value = received.withFirstValue(name, { String(decoding: $0, as: UTF8.self) }) {
            return value
        }
        for field in added where field.name.equalsIgnoringASCIICase(name) { return field.value }
        return nil
    }

    /// Calls `body` with the UTF-8 bytes of the first value of `name`, without making a String
    /// of a received one; nil when there is no such field.
    public func withFirstValue<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        if let received, let result = try received.withFirstValue(name, body) { return result }
        for field in added where field.name.equalsIgnoringASCIICase(name) {
            var value = field.value
            return try value.withUTF8(body)
        }
        return nil
    }

    /// Every value of `name`, in order.
    public func values(for name: String) -> [String] {
        var values: [String] = []
        if let received {
            var wanted = name
            wanted.withUTF8 { wanted in
                received.forEach { fieldName, value in
                    if Self.sameName(fieldName, wanted) { values.append(String(decoding: value, as: UTF8.self)) }
                    return true
                }
                return
            }
        }
        for field in added where field.name.equalsIgnoringASCIICase(name) { values.append(field.value) }
        return values
    }

    public func contains(_ name: String) -> Bool {
        withFirstValue(name) { _ in true } ?? false
    }

    /// Adds a field, keeping any existing ones of that name.
    public mutating func add(_ name: String, _ value: String) {
        added.append(Field(name: name, value: value))
    }

    /// Replaces every field of that name by one.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        added.append(Field(name: name, value: value))
    }

    public mutating func remove(_ name: String) {
        if let received {
            // Edited headers are kept as Strings from here on.
            added = received.materialized() + added
            self.received = nil
        }
        added.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// The comma-separated tokens of a list-valued header (e.g. `Connection`), lowercased.
    public func tokens(for name: String) -> [String] {
        values(for: name).flatMap { $0.split(separator: ",") }.map {
            $0.trimmingASCIIWhitespace().lowercased()
        }
    }

    /// ASCII case-insensitive equality of two field names' bytes.
    static func sameName(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where a[i] != b[i] {
            guard String.sameLetterIgnoringCase(a[i], b[i]) else { return false }
        }
        return true
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
