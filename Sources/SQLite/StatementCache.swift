/// Prepared statements keyed by SQL text, owned by one ``Connection``.
///
/// Bounded: when full, the whole cache is dropped (cheap and rare for a fixed set of queries).
/// Statements currently being stepped stay alive through their caller's reference.
struct StatementCache {
    private var statements: [String: Statement] = [:]
    /// The statement looked up last: a run of the same statement (an import's inserts) finds
    /// it by comparing the text, which for the same constant is one word, without hashing it.
    private var last: Statement?
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var count: Int { statements.count }

    subscript(sql: String) -> Statement? {
        mutating get {
            if let last, last.sql == sql { return last }
            let found = statements[sql]
            if found != nil { last = found }
            return found
        }
    }

    mutating func insert(_ statement: Statement) {
        guard capacity > 0 else { return }
        if statements.count >= capacity {
            statements.removeAll(keepingCapacity: true)
            last = nil
        }
        statements[statement.sql] = statement
    }

    /// Removes `statement` if it is the cached one for its SQL.
    mutating func evict(_ statement: Statement) {
        if statements[statement.sql] === statement {
            statements[statement.sql] = nil
        }
        if last === statement { last = nil }
    }

    mutating func removeAll() {
        statements.removeAll()
        last = nil
    }
}
