@testable import Storage
import TestThreads
import Testing

/// SQLite's `?N` placeholders become PostgreSQL's `$N`; nothing else in the text changes.
@Suite("PostgreSQL placeholders", .ownThreads)
struct PlaceholderTests {
    @Test func numberedPlaceholdersAreRewrittenOutsideQuotes() {
        #expect(PostgresPlaceholders.rewrite("SELECT a FROM t WHERE b = ?1 AND c > ?12 LIMIT ?3")
            == "SELECT a FROM t WHERE b = $1 AND c > $12 LIMIT $3")
        #expect(PostgresPlaceholders.rewrite("SELECT '?1', \"?2\" FROM t WHERE x LIKE ?3 ESCAPE '\\'")
            == "SELECT '?1', \"?2\" FROM t WHERE x LIKE $3 ESCAPE '\\'")
        #expect(PostgresPlaceholders.rewrite("SELECT ? , x?y, ?") == "SELECT ? , x?y, ?")
    }

    @Test func everyEngineStatementKeepsItsLengthAndLosesEveryQuestionMarkPlaceholder() {
        for sql in [SQL.insertAlbum, SQL.respaceRange, SQL.createLibrary, SQLDialect.postgres.indexOfAlbum, PostgresSQL.versions] {
            let rewritten = PostgresPlaceholders.text(sql)
            #expect(rewritten.utf8.count == sql.utf8.count)
            #expect(!rewritten.contains("?"), "\(rewritten)")
            #expect(rewritten.contains("$1"))
        }
    }
}
