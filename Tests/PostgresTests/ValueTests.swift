import HTTPTestSupport
import Postgres
import TestThreads
import Testing

@Suite(.ownThreads) struct ValueTests {
    @Test func everyTypeRoundTripsThroughATable() throws {
        let connection = try makeConnection()
        try connection.execute("CREATE TABLE t (i bigint, r double precision, s text, b bytea, f boolean)")
        let inserted = try connection.run(
            "INSERT INTO t VALUES ($1, $2, $3, $4, $5)",
            [.integer(-42), .real(2.5), .text("héllo ✓"), .bytes([0, 1, 0x5C, 255]), .bool(true)]
        )
        #expect(inserted == 1)
        let row = try connection.firstRow("SELECT i, r, s, b, f FROM t") { row in
            (try row.int64(0), try row.double(1), try row.string(2), try row.blob(3), try row.bool(4))
        }
        #expect(row?.0 == -42)
        #expect(row?.1 == 2.5)
        #expect(row?.2 == "héllo ✓")
        #expect(row?.3 == [0, 1, 0x5C, 255])
        #expect(row?.4 == true)
        let values = try connection.firstRow("SELECT i, r, s, b, f FROM t") { row in (0..<5).map { row.value($0) } }
        #expect(values == [.integer(-42), .real(2.5), .text("héllo ✓"), .bytes([0, 1, 0x5C, 255]), .bool(true)])
    }

    @Test(arguments: [
        PostgresValue.integer(0), .integer(.max), .integer(.min), .real(-0.1), .real(1e300), .real(.infinity), .real(.leastNonzeroMagnitude), .real(-.infinity),
        .text(""), .text("it's \"quoted\"; DROP TABLE t; --"), .bytes([]), .bytes(Array(0...255)), .bool(false), .bool(true),
    ])
    func aBoundValueComesBackUnchanged(value: PostgresValue) throws {
        let connection = try makeConnection()
        #expect(try connection.scalar("SELECT $1", [value], as: PostgresValue.self) == value)
    }

    @Test func nullParametersTakeTheirTypeFromTheStatement() throws {
        let connection = try makeConnection()
        try connection.execute("CREATE TABLE t (i bigint, s text, b bytea, f boolean)")
        try connection.run("INSERT INTO t VALUES ($1, $2, $3, $4)", [.null, .null, .null, .null])
        try connection.run("INSERT INTO t VALUES ($1, $2, $3, $4)", [.integer(1), .null, .bytes([7]), .null])
        let row = try connection.firstRow("SELECT i, s, b, f FROM t WHERE i IS NULL") { row in (0..<4).map { row.isNull($0) } }
        #expect(row == [true, true, true, true])
        #expect(try connection.scalar("SELECT s FROM t WHERE i = $1", [.integer(1)], as: String?.self) == .some(nil))
        #expect(try connection.scalar("SELECT coalesce($1, i) FROM t WHERE i = 1", [.null], as: Int.self) == 1)
        #expect(try connection.scalar("SELECT count(*) FROM t WHERE i = $1", [.null], as: Int.self) == 0)
    }

    @Test func integerParametersDoArithmetic() throws {
        let connection = try makeConnection()
        #expect(try connection.scalar("SELECT $1 - $2", [.integer(10), .integer(3)], as: Int.self) == 7)
        #expect(try connection.scalar("SELECT $1 * $2 + 1", [.integer(1 << 40), .integer(4)], as: Int64.self) == (1 << 42) + 1)
        #expect(try connection.scalar("SELECT $1 - $2", [.integer(10), .null], as: Int?.self) == .some(nil))
        #expect(try connection.scalar("SELECT $1 / $2", [.real(1), .integer(4)], as: Double.self) == 0.25)
        #expect(try connection.scalar("SELECT NOT $1", [.bool(false)], as: Bool.self) == true)
        #expect(try connection.scalar("SELECT $1 || $2", [.text("a"), .text("b")], as: String.self) == "ab")
    }

    @Test func largeTextAndBytesRoundTrip() throws {
        let connection = try makeConnection()
        try connection.execute("CREATE TABLE t (s text, b bytea)")
        let text = String(repeating: "Ünïcode and ASCII, ", count: 200_000)
        var generator = SeededGenerator(seed: 7)
        let bytes = (0..<3_000_000).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        try connection.run("INSERT INTO t VALUES ($1, $2)", [.text(text), .bytes(bytes)])
        let row = try connection.firstRow("SELECT s, b, length(s), length(b) FROM t") { row in
            (try row.string(0), try row.blob(1), try row.int(2), try row.int(3))
        }
        #expect(row?.0 == text)
        #expect(row?.1 == bytes)
        #expect(row?.2 == text.count)
        #expect(row?.3 == bytes.count)
    }

    @Test func decodingIsStrict() throws {
        let connection = try makeConnection()
        let sql = "SELECT 'x'::text, NULL::bigint, 3::bigint, true, '\\x01'::bytea, 2.5::float8, 1.5::numeric, 5::numeric"
        _ = try connection.firstRow(sql) { row throws -> Void in
            #expect(throws: PostgresError.self) { try row.int(0) }
            #expect(throws: PostgresError.self) { try row.int(1) }
            #expect(try row.get(1, as: Int?.self) == nil)
            #expect(try row.double(2) == 3)
            #expect(try row.string(2) == "3")
            #expect(try row.bool(2) == true)
            #expect(throws: PostgresError.self) { try row.int(3) }
            #expect(try row.bool(3) == true)
            #expect(throws: PostgresError.self) { try row.string(4) }
            #expect(throws: PostgresError.self) { try row.blob(0) }
            #expect(throws: PostgresError.self) { try row.int(5) }
            #expect(throws: PostgresError.self) { try row.int(6) }
            #expect(try row.double(6) == 1.5)
            #expect(try row.int(7) == 5)
            #expect(row.value(6) == .real(1.5))
            #expect(row.value(7) == .integer(5))
            #expect(row.columnCount == 8)
        }
    }

    @Test func aggregatesOfBigintsDecodeAsIntegers() throws {
        let connection = try makeConnection()
        try connection.execute("CREATE TABLE t (n bigint); INSERT INTO t VALUES (1), (2), (40)")
        #expect(try connection.scalar("SELECT sum(n) FROM t", as: Int64.self) == 43)
        #expect(try connection.scalar("SELECT max(n) FROM t", as: Int.self) == 40)
        #expect(try connection.scalar("SELECT sum(n) FROM t WHERE n > 100", as: Int64?.self) == .some(nil))
        #expect(try connection.scalar("SELECT n FROM t WHERE n > 100", as: Int.self) == nil)
    }

    @Test func queryMapsEveryRowAndRunCountsThem() throws {
        let connection = try makeConnection()
        try connection.execute("CREATE TABLE t (n bigint)")
        #expect(try connection.run("INSERT INTO t SELECT generate_series(1, $1)", [.integer(10)]) == 10)
        #expect(try connection.query("SELECT n FROM t ORDER BY n") { try $0.int($0.columnCount - 1) } == Array(1...10))
        #expect(try connection.run("UPDATE t SET n = n + 1 WHERE n > $1", [.integer(7)]) == 3)
        #expect(try connection.run("DELETE FROM t") == 10)
        #expect(try connection.run("CREATE INDEX t_n ON t (n)") == 0)
    }
}
