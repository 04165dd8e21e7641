import TestThreads
import Testing
@testable import SQLite

@Suite(.ownThreads) struct ValueTests {
    static let unicode = "Ünïcødé 🎵 日本語 \u{0} after-NUL é (e\u{301})"
    static let blobWithZeros: [UInt8] = [0, 1, 0, 255, 0, 0, 127, 0]

    /// Inserts `value` into an untyped column and reads it back.
    private func roundTrip(_ value: SQLiteValue, _ connection: Connection) throws -> SQLiteValue {
        try connection.run("DELETE FROM v")
        try connection.run("INSERT INTO v (x) VALUES (?)", [value])
        return try #require(try connection.scalar("SELECT x FROM v", as: SQLiteValue.self))
    }

    @Test func everyStorageClassRoundTrips() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("CREATE TABLE v (x ANY)") // no affinity: values stored as bound
            let values: [SQLiteValue] = [
                .null,
                .integer(0), .integer(Int64.max), .integer(Int64.min), .integer(-1),
                .real(3.5), .real(-0.25), .real(.infinity), .real(-.infinity), .real(1e-300),
                .text(""), .text("plain"), .text(Self.unicode),
                .blob([]), .blob(Self.blobWithZeros), .blob([UInt8](repeating: 0, count: 10_000)),
            ]
            for value in values {
                let back = try roundTrip(value, connection)
                #expect(back == value, "round trip of \(value)")
                #expect(back.type == value.type)
            }
            // Storage class as seen by SQLite itself.
            try connection.run("DELETE FROM v")
            try connection.run("INSERT INTO v (x) VALUES (?)", [.blob([])])
            #expect(try connection.scalar("SELECT typeof(x) FROM v", as: String.self) == "blob")
            try connection.run("DELETE FROM v")
            try connection.run("INSERT INTO v (x) VALUES (?)", [.text("")])
            #expect(try connection.scalar("SELECT typeof(x) FROM v", as: String.self) == "text")
            try connection.run("DELETE FROM v")
            try connection.run("INSERT INTO v (x) VALUES (?)", [.text(Self.unicode)])
            #expect(try connection.scalar("SELECT length(CAST(x AS BLOB)) FROM v", as: Int.self) == Self.unicode.utf8.count)
        }
    }

    @Test func typedBindAndColumnRoundTrips() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("""
                CREATE TABLE t (i INTEGER, i64 INTEGER, d REAL, s TEXT, b BLOB, flag INTEGER,
                                oi INTEGER, os TEXT, ob BLOB, od REAL, oflag INTEGER)
                """)
            let optionalInt: Int? = nil
            let optionalString: String? = "present"
            let optionalBlob: [UInt8]? = nil
            let optionalDouble: Double? = 2.75
            let optionalBool: Bool? = nil
            try connection.run(
                "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    SQLiteValue(Int(-7)), SQLiteValue(Int64(1) << 62), SQLiteValue(Double.pi),
                    SQLiteValue(Self.unicode), SQLiteValue(Self.blobWithZeros), SQLiteValue(true),
                    SQLiteValue(optionalInt), SQLiteValue(optionalString), SQLiteValue(optionalBlob),
                    SQLiteValue(optionalDouble), SQLiteValue(optionalBool),
                ]
            )
            let checked = try connection.firstRow("SELECT * FROM t") { row throws -> Bool in
                #expect(try row.int(0) == -7)
                #expect(try row.int64(1) == Int64(1) << 62)
                #expect(try row.double(2) == Double.pi)
                #expect(try row.string(3) == Self.unicode)
                #expect(try row.blob(4) == Self.blobWithZeros)
                #expect(try row.bool(5) == true)
                #expect(try row.get(6, as: Int?.self) == nil)
                #expect(try row.get(7, as: String?.self) == "present")
                #expect(try row.get(8, as: [UInt8]?.self) == nil)
                #expect(try row.get(9, as: Double?.self) == 2.75)
                #expect(try row.get(10, as: Bool?.self) == nil)
                #expect(row.isNull(6))
                #expect(row.type(3) == .text)
                #expect(row.type(4) == .blob)
                #expect(row.value(0) == .integer(-7))
                return true
            }
            #expect(checked == true)
            // Bool false and literals.
            try connection.run("DELETE FROM t")
            try connection.run("INSERT INTO t (i, d, s, flag, os) VALUES (?, ?, ?, ?, ?)", [5, 1.5, "lit", false, nil])
            let row = try connection.firstRow("SELECT i, d, s, flag, os FROM t") { row in
                (try row.int(0), try row.double(1), try row.string(2), try row.bool(3), try row.get(4, as: String?.self))
            }
            #expect(row?.0 == 5)
            #expect(row?.1 == 1.5)
            #expect(row?.2 == "lit")
            #expect(row?.3 == false)
            #expect(row?.4 == nil)
        }
    }

    @Test func strictColumnConversions() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            func mismatch(_ sql: String, _ decode: @escaping (Row) throws -> Void) {
                #expect(Comment(rawValue: sql)) {
                    _ = try connection.firstRow(sql) { try decode($0) }
                } throws: { error in
                    guard let error = error as? SQLiteError else { return false }
                    return error.isMismatch && error.sql == sql
                }
            }
            mismatch("SELECT NULL") { _ = try $0.int(0) }
            mismatch("SELECT NULL") { _ = try $0.string(0) }
            mismatch("SELECT 'x'") { _ = try $0.int(0) }
            mismatch("SELECT 1.5") { _ = try $0.int64(0) }
            mismatch("SELECT 12") { _ = try $0.string(0) }
            mismatch("SELECT 'abc'") { _ = try $0.blob(0) }
            mismatch("SELECT x'00'") { _ = try $0.get(0, as: String?.self) }
            // Integer widens to Double.
            #expect(try connection.scalar("SELECT 3", as: Double.self) == 3.0)
        }
    }

    @Test func nanIsRejectedRatherThanStoredAsNull() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            #expect {
                try connection.run("SELECT ?", [.real(.nan)])
            } throws: { error in
                (error as? SQLiteError)?.isMismatch == true
            }
        }
    }

    @Test func literalConformances() {
        let values: [SQLiteValue] = [nil, 1, 2.5, "s", true, false]
        #expect(values == [.null, .integer(1), .real(2.5), .text("s"), .integer(1), .integer(0)])
        #expect(SQLiteValue.null.isNull)
        #expect(!SQLiteValue.integer(0).isNull)
    }
}
