/// Prepared statements keyed by SQL text, owned by one ``Connection``.
///
/// Bounded: when full, the whole cache is dropped (cheap and rare for a fixed set of queries).
/// Statements currently being stepped stay alive through their caller's reference.
struct StatementCache {
    private var statements: [String: Statement] = [:]
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var count: Int { statements.count }

    subscript(sql: String) -> Statement? {
        statements[sql]
    }

    mutating func insert(_ statement: Statement) {
        guard capacity > 0 else { return }
        if statements.count >= capacity {
            statements.removeAll(keepingCapacity: true)
        }
        statements[statement.sql] = statement
    }

    /// Removes `statement` if it is the cached one for its SQL.
    mutating func evict(_ statement: Statement) {
        if statements[statement.sql] === statement {
            statements[statement.sql] = nil
        }
    }

    mutating func removeAll() {
        statements.removeAll()
    }
}
