/// The header fields of a request head as it arrived: one copy of the field lines and, behind
/// them in the same buffer, where each name and value lies. A lookup compares bytes; a String
/// is made only for a value somebody asks for as a String. Parsing a head therefore costs one
/// allocation however many fields it has (rather than an array plus a String per field longer
/// than 15 bytes), and a revalidation reads its `If-None-Match` without making one.
///
/// Layout of `storage`: `fieldBytes` bytes of field lines (copied from the input buffer, CR/LF
/// included), then four native-endian `UInt32` per field: name start, name end, value start,
/// value end, as offsets into the field lines. Values are already trimmed of spaces and tabs.
struct RequestHeadFields: Sendable {
    private let storage: [UInt8]
    private let fieldBytes: Int
    let count: Int

    /// Copies `lines` (the field lines of a head) and records `spans` (offsets into `lines`).
    init(lines: ArraySlice<UInt8>, spans: UnsafeBufferPointer<UInt32>) {
        precondition(spans.count % 4 == 0, "four offsets per field")
        fieldBytes = lines.count
        count = spans.count / 4
        let tableBytes = spans.count * MemoryLayout<UInt32>.size
        storage = [UInt8](unsafeUninitializedCapacity: lines.count + tableBytes) { buffer, initialized in
            lines.withUnsafeBufferPointer { source in
                if let base = source.baseAddress, !source.isEmpty {
                    buffer.baseAddress!.initialize(from: base, count: source.count)
                }
            }
            if tableBytes > 0 {
                UnsafeMutableRawPointer(buffer.baseAddress! + lines.count)
                    .copyMemory(from: spans.baseAddress!, byteCount: tableBytes)
            }
            initialized = lines.count + tableBytes
        }
    }

    /// Calls `body` with the name and value bytes of every field, in order, until it returns
    /// false. Returns false when `body` stopped the walk.
    @discardableResult
    func forEach(_ body: (_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) throws -> Bool) rethrows -> Bool {
        try storage.withUnsafeBufferPointer { bytes in
            // A head without fields may have no storage at all.
            guard count > 0, let base = bytes.baseAddress else { return true }
            let table = UnsafeRawPointer(base) + fieldBytes
            for index in 0..<count {
                let at = table + index * 4 * MemoryLayout<UInt32>.size
                let nameStart = Int(at.loadUnaligned(as: UInt32.self))
                let nameEnd = Int(at.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
                let valueStart = Int(at.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
                let valueEnd = Int(at.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
                let name = UnsafeBufferPointer(rebasing: bytes[nameStart..<nameEnd])
                let value = UnsafeBufferPointer(rebasing: bytes[valueStart..<valueEnd])
                if try !body(name, value) { return false }
            }
            return true
        }
    }

    /// Calls `body` with the value bytes of the first field named `name` (ASCII case-insensitive);
    /// nil when there is none.
    func withFirstValue<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        var name = name
        return try name.withUTF8 { wanted in
            var result: R?
            try forEach { fieldName, value in
                guard HTTPHeaders.sameName(fieldName, wanted) else { return true }
                result = try body(value)
                return false
            }
            return result
        }
    }

    /// Every field as a String pair, in order.
    func materialized() -> [HTTPHeaders.Field] {
        var fields: [HTTPHeaders.Field] = []
        fields.reserveCapacity(count + 4)
        forEach { name, value in
            fields.append(HTTPHeaders.Field(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
            return true
        }
        return fields
    }
}
