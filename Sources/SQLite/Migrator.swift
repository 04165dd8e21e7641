/// An ordered list of named schema migrations.
///
/// Applied identifiers are recorded in a `schema_migrations` table. Each pending migration
/// runs inside `BEGIN IMMEDIATE` together with the insert that records it, so it is applied
/// entirely or not at all; applied migrations are skipped. Migrations run in registration
/// order and must never be renamed or reordered once shipped.
///
/// ```swift
/// var migrator = Migrator()
/// migrator.register("v1") { db in try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)") }
/// ```
public struct Migrator: Sendable {
    public typealias Migration = @Sendable (Connection) throws -> Void

    private struct Entry: Sendable {
        let identifier: String
        let migrate: Migration
    }

    private var entries: [Entry] = []

    public init() {}

    /// Identifiers in registration (= application) order.
    public var identifiers: [String] { entries.map(\.identifier) }

    /// Appends a migration. Identifiers must be non-empty and unique (programming error otherwise).
    public mutating func register(_ identifier: String, _ migration: @escaping Migration) {
        precondition(!identifier.isEmpty, "migration identifier must not be empty")
        precondition(!entries.contains { $0.identifier == identifier }, "duplicate migration identifier \(identifier)")
        entries.append(Entry(identifier: identifier, migrate: migration))
    }

    /// Applies pending migrations in order. Returns the identifiers applied by this call.
    /// Stops at the first failing migration (rolled back) and throws a ``MigrationError``.
    /// A database that records a migration this migrator does not know (written by a newer
    /// program: a downgrade) is refused with ``NewerSchemaError`` before anything is applied.
    @discardableResult
    public func migrate(_ connection: Connection) throws -> [String] {
        try connection.execute(Migrator.createTableSQL)
        let known = Set(identifiers)
        let unknown = try Migrator.appliedIdentifiers(in: connection).filter { !known.contains($0) }
        guard unknown.isEmpty else { throw NewerSchemaError(unknownMigrations: unknown) }
        var applied: [String] = []
        for entry in entries {
            let didApply: Bool
            do {
                didApply = try connection.transaction(.immediate) { db -> Bool in
                    // Checked under the write lock, so concurrent migrators cannot both apply it.
                    if try db.scalar(Migrator.isAppliedSQL, [.text(entry.identifier)], as: Int.self) != nil {
                        return false
                    }
                    try entry.migrate(db)
                    try db.run(Migrator.recordSQL, [.text(entry.identifier)])
                    return true
                }
            } catch {
                connection.clearStatementCache()
                throw MigrationError(identifier: entry.identifier, underlying: error)
            }
            connection.clearStatementCache()
            if didApply {
                applied.append(entry.identifier)
            }
        }
        return applied
    }

    /// Identifiers recorded in `schema_migrations`, in application order
    /// (empty when the table does not exist yet).
    public static func appliedIdentifiers(in connection: Connection) throws -> [String] {
        let exists = try connection.scalar(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'", as: Int.self
        )
        guard exists != nil else { return [] }
        return try connection.query("SELECT identifier FROM schema_migrations ORDER BY rowid") { try $0.string(0) }
    }

    private static let createTableSQL = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            identifier TEXT PRIMARY KEY NOT NULL,
            applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        )
        """
    private static let isAppliedSQL = "SELECT 1 FROM schema_migrations WHERE identifier = ?"
    private static let recordSQL = "INSERT INTO schema_migrations (identifier) VALUES (?)"
}

/// A migration failed and was rolled back; earlier migrations stay applied.
public struct MigrationError: Error, CustomStringConvertible {
    public let identifier: String
    public let underlying: any Error

    public var description: String {
        "migration \(identifier) failed: \(underlying)"
    }
}

/// The database was migrated by a newer program than this one: it records migrations this
/// program does not know, so it cannot tell what the schema means. Nothing was changed.
public struct NewerSchemaError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The recorded identifiers this program does not know, in the order they were applied.
    public let unknownMigrations: [String]

    public init(unknownMigrations: [String]) { self.unknownMigrations = unknownMigrations }

    public var description: String {
        "the database was written by a newer version (it has schema migrations this version does not know: "
            + unknownMigrations.joined(separator: ", ") + "); run that version, or restore a backup taken before the upgrade"
    }
}
