import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import SQLite
import Storage
import TestThreads
import Testing

/// A downgrade: a database written by a newer version (it records a migration this one does not
/// know) is refused at start, with nothing changed, and the message says how to go back.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct NewerSchemaTests {
    /// Records a migration no version of this program has, as a newer version would.
    static func recordUnknownMigration(in path: String) throws {
        let connection = try Connection(path: path, mode: .readWrite)
        try connection.run("INSERT INTO schema_migrations (identifier) VALUES ('v999-from-the-future')")
    }

    @Test func theStoreRefusesADatabaseOfANewerSchemaAndChangesNothing() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("bluelibrary.sqlite")
        _ = try SQLiteAlbumStore(path: path)
        try Self.recordUnknownMigration(in: path)
        let before = try Migrator.appliedIdentifiers(in: Connection(path: path, mode: .readWrite))

        #expect { try SQLiteAlbumStore(path: path) } throws: { error in
            (error as? NewerSchemaError)?.unknownMigrations == ["v999-from-the-future"]
        }
        #expect(try Migrator.appliedIdentifiers(in: Connection(path: path, mode: .readWrite)) == before)
    }

    @Test func theServerStopsAtStartWithExitCode2AndSaysHowToGoBack() throws {
        let directory = TestApp.temporaryDirectory()
        _ = try SQLiteAlbumStore(path: directory + "/bluelibrary.sqlite")
        try Self.recordUnknownMigration(in: directory + "/bluelibrary.sqlite")
        let (status, output) = try ServerProcess.run(["serve", "--port", "0", "--data-dir", directory])
        #expect(status == 2)
        #expect(output.contains("written by a newer version") && output.contains("v999-from-the-future")
                && output.contains("restore a backup taken before the upgrade"), "\(output)")
    }
}
