import Testing
import Postgres

@Suite struct RoundTripTests {
    @Test func insertsAndReadsBackEveryType() throws {
        let connection = try makeConnection()
        try connection.execute("CREATE TABLE t (i bigint, r double precision, s text, b bytea, f boolean)")
        let inserted = try connection.run(
            "INSERT INTO t VALUES ($1, $2, $3, $4, $5)",
            [.integer(-42), .real(2.5), .text("héllo"), .bytes([0, 1, 255]), .bool(true)]
        )
        #expect(inserted == 1)
        let rows = try connection.query("SELECT i, r, s, b, f FROM t") { row in
            (try row.int64(0), try row.double(1), try row.string(2), try row.blob(3), try row.bool(4))
        }
        #expect(rows.count == 1)
        #expect(rows[0].0 == -42)
        #expect(rows[0].1 == 2.5)
        #expect(rows[0].2 == "héllo")
        #expect(rows[0].3 == [0, 1, 255])
        #expect(rows[0].4 == true)
    }
}
