import CPostgres

/// Owns one `PGresult` and clears it in `deinit`: every result libpq hands out is wrapped in
/// one of these at once, so none can leak on any path.
final class PostgresResult {
    let handle: OpaquePointer

    init(_ handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        PQclear(handle)
    }

    var status: ExecStatusType { PQresultStatus(handle) }
    var rowCount: Int { Int(PQntuples(handle)) }
    var columnCount: Int { Int(PQnfields(handle)) }

    /// Rows affected by an INSERT/UPDATE/DELETE (and rows of a SELECT, MOVE, FETCH, COPY); 0
    /// for other commands.
    var affectedRows: Int {
        guard let text = PQcmdTuples(handle) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }

    /// Throws the error this result carries unless its status is one of `accepted`.
    func check(_ accepted: [ExecStatusType], connection: OpaquePointer, sql: String?) throws {
        let status = self.status
        guard !accepted.contains(status) else { return }
        switch status {
        case PGRES_FATAL_ERROR, PGRES_NONFATAL_ERROR, PGRES_BAD_RESPONSE:
            throw PostgresError(result: handle, connection: connection, sql: sql)
        default:
            throw PostgresError(
                kind: .other, message: "unexpected result status \(String(cString: PQresStatus(status)))", sql: sql)
        }
    }
}

/// Type OIDs this wrapper binds or decodes (`pg_type.dat`).
enum TypeOID {
    static let unknown: Oid = 0
    static let bool: Oid = 16
    static let bytea: Oid = 17
    static let name: Oid = 19
    static let int8: Oid = 20
    static let int2: Oid = 21
    static let int4: Oid = 23
    static let text: Oid = 25
    static let oid: Oid = 26
    static let float4: Oid = 700
    static let float8: Oid = 701
    static let numeric: Oid = 1700
}
