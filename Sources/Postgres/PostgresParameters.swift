import CPostgres

/// Statement parameters encoded for `PQexecPrepared`: every value in binary format, typed by
/// what was bound (`bigint`, `double precision`, `text`, `bytea`, `boolean`). NULL is sent
/// with type 0 (unknown): the server infers its type from the statement (`x = $1`), so a
/// NULL alone in an expression the server cannot type (`$1 IS NULL`) needs a cast in SQL.
struct PostgresParameters {
    /// One type OID per parameter: part of the prepared statement's identity.
    let types: [Oid]
    /// All non-NULL values, back to back (plus one spare byte, so no pointer is ever nil).
    private let bytes: [UInt8]
    /// Where each value starts in `bytes`; -1 for NULL.
    private let offsets: [Int]
    private let lengths: [Int32]

    init(_ values: [PostgresValue]) {
        var types: [Oid] = []
        var bytes: [UInt8] = []
        var offsets: [Int] = []
        var lengths: [Int32] = []
        types.reserveCapacity(values.count)
        offsets.reserveCapacity(values.count)
        lengths.reserveCapacity(values.count)
        for value in values {
            let start = bytes.count
            let type: Oid
            switch value {
            case .null:
                types.append(TypeOID.unknown)
                offsets.append(-1)
                lengths.append(0)
                continue
            case .integer(let integer):
                type = TypeOID.int8
                appendBigEndian(UInt64(bitPattern: integer), to: &bytes)
            case .real(let real):
                type = TypeOID.float8
                appendBigEndian(real.bitPattern, to: &bytes)
            case .text(let text):
                type = TypeOID.text
                bytes.append(contentsOf: text.utf8)
            case .bytes(let data):
                type = TypeOID.bytea
                bytes.append(contentsOf: data)
            case .bool(let flag):
                type = TypeOID.bool
                bytes.append(flag ? 1 : 0)
            }
            types.append(type)
            offsets.append(start)
            lengths.append(Int32(bytes.count - start))
        }
        bytes.append(0)
        self.types = types
        self.bytes = bytes
        self.offsets = offsets
        self.lengths = lengths
    }

    var count: Int32 { Int32(types.count) }

    /// Calls `body` with the C arrays `PQexecPrepared` and `PQsendQueryPrepared` take
    /// (values, lengths, formats), valid only inside `body`.
    func withCArrays<T>(
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) throws -> T
    ) rethrows -> T {
        let formats = [Int32](repeating: 1, count: types.count)
        return try bytes.withUnsafeBytes { raw in
            let base = raw.baseAddress!.assumingMemoryBound(to: CChar.self)
            let pointers: [UnsafePointer<CChar>?] = offsets.map { $0 < 0 ? nil : base + $0 }
            return try pointers.withUnsafeBufferPointer { values in
                try lengths.withUnsafeBufferPointer { lengths in
                    try formats.withUnsafeBufferPointer { formats in
                        try body(values.baseAddress, lengths.baseAddress, formats.baseAddress)
                    }
                }
            }
        }
    }
}

private func appendBigEndian(_ value: UInt64, to bytes: inout [UInt8]) {
    for shift in stride(from: 56, through: 0, by: -8) {
        bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
    }
}
