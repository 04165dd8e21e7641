import SQLite

/// The SQLite store's migrations: `SchemaHistory`'s, spelled for SQLite, in order.
enum Schema {
    static var migrator: Migrator { migrator(first: SchemaHistory.migrations.count) }

    /// A migrator of the first `count` migrations only (tests build older databases with it).
    static func migrator(first count: Int) -> Migrator {
        var migrator = Migrator()
        for (identifier, steps) in SchemaHistory.migrations.prefix(count) {
            let statements = steps.flatMap { $0.statements(for: .sqlite) }.joined(separator: "\n")
            migrator.register(identifier) { db in try db.execute(statements) }
        }
        return migrator
    }

    /// An index a bulk import may drop and recreate (v3's sort indexes, v7's album-id index):
    /// its name and its exact `CREATE INDEX` text, as the migration ran it.
    struct SortIndex: Sendable {
        let name: String
        let create: String

        init(_ index: IndexDefinition) {
            name = index.name
            create = index.create(.sqlite)
        }
    }

    /// The sort indexes (`SchemaHistory.sortIndexes`) as SQLite creates them.
    static let sortIndexes = SchemaHistory.sortIndexes.map(SortIndex.init)

    /// v7's global album-id index as SQLite creates it.
    static let albumIDIndex = SortIndex(SchemaHistory.albumIDIndex)

    /// The indexes a bulk import may drop and rebuild: v3's sort indexes and v7's album-id index.
    static var bulkIndexes: [SortIndex] { sortIndexes + [albumIDIndex] }
}
