import TestThreads
import Testing
@testable import SQLite

@Suite(.ownThreads) struct ErrorTests {
    @Test func syntaxErrorCarriesCodeMessageAndSQL() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            let sql = "SELEC broken FROM nowhere"
            let error = try #require(throws: SQLiteError.self) {
                try connection.run(sql)
            }
            #expect(error.code == 1) // SQLITE_ERROR
            #expect(error.extendedCode == 1)
            #expect(error.message.contains("syntax error"))
            #expect(error.sql == sql)
            #expect(error.description.contains(sql))
            #expect(error.description.contains("syntax error"))
        }
    }

    @Test func errorHidesBoundValues() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("CREATE TABLE users (email TEXT UNIQUE)")
            let secret = "secret-password-123@example.com"
            try connection.run("INSERT INTO users (email) VALUES (?)", [.text(secret)])
            let sql = "INSERT INTO users (email) VALUES (?)"
            let error = try #require(throws: SQLiteError.self) {
                try connection.run(sql, [.text(secret)])
            }
            #expect(error.sql == sql)
            #expect(!error.description.contains(secret))
            #expect(!error.message.contains(secret))
            #expect(error.description.contains("UNIQUE constraint failed: users.email"))
        }
    }

    @Test func constraintViolationsAreClassified() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("""
                CREATE TABLE parent (id INTEGER PRIMARY KEY);
                CREATE TABLE child (
                    id INTEGER PRIMARY KEY,
                    parent_id INTEGER NOT NULL REFERENCES parent(id),
                    code TEXT UNIQUE,
                    n INTEGER CHECK (n >= 0)
                );
                INSERT INTO parent (id) VALUES (1);
                INSERT INTO child (id, parent_id, code, n) VALUES (1, 1, 'a', 0);
                """)
            func failure(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> SQLiteError {
                try #require(throws: SQLiteError.self) { try connection.run(sql, bindings) }
            }
            let unique = try failure("INSERT INTO child (parent_id, code) VALUES (1, ?)", ["a"])
            #expect(unique.isConstraintViolation && unique.isUniqueViolation)
            #expect(!unique.isForeignKeyViolation)
            #expect(unique.extendedCode == 2067)

            let primaryKey = try failure("INSERT INTO child (id, parent_id) VALUES (1, 1)")
            #expect(primaryKey.isUniqueViolation && primaryKey.extendedCode == 1555)

            let foreignKey = try failure("INSERT INTO child (parent_id) VALUES (99)")
            #expect(foreignKey.isConstraintViolation && foreignKey.isForeignKeyViolation)
            #expect(!foreignKey.isUniqueViolation)

            let notNull = try failure("INSERT INTO child (parent_id) VALUES (NULL)")
            #expect(notNull.isNotNullViolation)

            let check = try failure("INSERT INTO child (parent_id, n) VALUES (1, -1)")
            #expect(check.isCheckViolation && check.isConstraintViolation)

            let syntax = try failure("INSERT INTO")
            #expect(!syntax.isConstraintViolation && !syntax.isBusy)
        }
    }

    @Test func wrongBindingCountIsRejected() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            for bindings: [SQLiteValue] in [[], [1], [1, 2, 3]] {
                let error = try #require(throws: SQLiteError.self) {
                    try connection.run("SELECT ?, ?", bindings)
                }
                #expect(error.isRange)
            }
            #expect(try connection.firstRow("SELECT ?, ?", [1, 2]) { try $0.int(0) + $0.int(1) } == 3)
        }
    }
}
