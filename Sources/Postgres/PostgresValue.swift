/// A value bound to a statement parameter or read from a column: the PostgreSQL types this
/// project uses (`bigint`, `double precision`, `text`, `bytea`, `boolean`) and NULL.
public enum PostgresValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case bytes([UInt8])
    case bool(Bool)
}
