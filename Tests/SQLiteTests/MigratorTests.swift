import TestThreads
import Testing
@testable import SQLite

@Suite(.ownThreads) struct MigratorTests {
    private func baseMigrator() -> Migrator {
        var migrator = Migrator()
        migrator.register("v1") { db in
            try db.execute("CREATE TABLE albums (id INTEGER PRIMARY KEY, title TEXT NOT NULL)")
        }
        migrator.register("v2") { db in
            try db.execute("ALTER TABLE albums ADD COLUMN year INTEGER")
            try db.run("INSERT INTO albums (title, year) VALUES (?, ?)", ["seed", 1999])
        }
        return migrator
    }

    @Test func aDatabaseWithAMigrationThisMigratorDoesNotKnowIsRefused() throws {
        try withDatabasePath { path in
            var newer = baseMigrator()
            newer.register("v3") { db in try db.execute("CREATE TABLE later (id INTEGER PRIMARY KEY)") }
            _ = try newer.migrate(try Connection(path: path))
            // An older program (v1, v2 only) opens it: a downgrade.
            let connection = try Connection(path: path)
            #expect(throws: NewerSchemaError(unknownMigrations: ["v3"])) { try baseMigrator().migrate(connection) }
            #expect(try Migrator.appliedIdentifiers(in: connection) == ["v1", "v2", "v3"])
            #expect(NewerSchemaError(unknownMigrations: ["v3"]).description.contains("restore a backup taken before the upgrade"))
        }
    }

    @Test func migrationsAreAppliedOnceAndRecorded() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            #expect(try Migrator.appliedIdentifiers(in: connection) == [])
            var migrator = baseMigrator()
            #expect(migrator.identifiers == ["v1", "v2"])
            #expect(try migrator.migrate(connection) == ["v1", "v2"])
            #expect(try Migrator.appliedIdentifiers(in: connection) == ["v1", "v2"])
            #expect(try connection.scalar("SELECT count(*) FROM albums", as: Int.self) == 1)

            // Second run: nothing applied (the seed insert would duplicate otherwise).
            #expect(try migrator.migrate(connection) == [])
            #expect(try connection.scalar("SELECT count(*) FROM albums", as: Int.self) == 1)

            // From another connection, a new migration applies alone.
            migrator.register("v3") { db in try db.execute("CREATE INDEX albums_year ON albums (year)") }
            let other = try Connection(path: path)
            #expect(try migrator.migrate(other) == ["v3"])
            #expect(try Migrator.appliedIdentifiers(in: other) == ["v1", "v2", "v3"])
            let appliedAt = try other.scalar("SELECT applied_at FROM schema_migrations WHERE identifier = 'v1'", as: String.self)
            #expect(appliedAt?.hasSuffix("Z") == true)
        }
    }

    @Test func failingMigrationRollsBackAndLeavesNoRecord() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            var migrator = baseMigrator()
            migrator.register("v3-broken") { db in
                try db.execute("CREATE TABLE extra (x)")
                try db.run("INSERT INTO albums (title) VALUES ('partial')")
                try db.run("INSERT INTO albums (title) VALUES (NULL)") // NOT NULL violation
            }
            migrator.register("v4") { db in try db.execute("CREATE TABLE never (x)") }

            let error = try #require(throws: MigrationError.self) {
                try migrator.migrate(connection)
            }
            #expect(error.identifier == "v3-broken")
            #expect((error.underlying as? SQLiteError)?.isNotNullViolation == true)
            #expect(error.description.contains("v3-broken"))

            #expect(!connection.isInTransaction)
            #expect(try Migrator.appliedIdentifiers(in: connection) == ["v1", "v2"])
            let tables = try connection.query("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name") {
                try $0.string(0)
            }
            #expect(tables == ["albums", "schema_migrations"])
            #expect(try connection.scalar("SELECT count(*) FROM albums", as: Int.self) == 1)
        }
    }

    @Test func databaseInitRunsMigrations() throws {
        try withDatabasePath { path in
            let database = try Database(path: path, migrator: baseMigrator())
            let applied = try database.read { try Migrator.appliedIdentifiers(in: $0) }
            #expect(applied == ["v1", "v2"])
            let again = try Database(path: path, migrator: baseMigrator())
            #expect(try again.read { try $0.scalar("SELECT count(*) FROM albums", as: Int.self) } == 1)
        }
    }

    @Test func databaseInitFailsOnFailingMigration() throws {
        try withDatabasePath { path in
            var migrator = Migrator()
            migrator.register("bad") { db in try db.execute("CREATE TABLE x (") }
            #expect(throws: MigrationError.self) {
                _ = try Database(path: path, migrator: migrator)
            }
        }
    }
}
