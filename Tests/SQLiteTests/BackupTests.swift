import Foundation
import HTTPTestSupport
import TestThreads
import Testing
@testable import SQLite

@Suite(.ownThreads) struct BackupTests {
    @Test func aBackupTakenWhileAnotherConnectionCommitsIsOneCommitsDatabase() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("live.sqlite").path
            let setup = try Connection(path: path)
            // Each commit inserts one row and bumps the counter to the row count.
            try setup.execute("CREATE TABLE rows (n INTEGER PRIMARY KEY); CREATE TABLE counter (value INTEGER NOT NULL); INSERT INTO counter VALUES (0)")
            let writer = TestThread { () throws -> Int in
                let connection = try Connection(path: path)
                for n in 1...2_000 {
                    try connection.transaction(.immediate) { db in
                        try db.run("INSERT INTO rows (n) VALUES (?)", [.integer(Int64(n))])
                        try db.run("UPDATE counter SET value = ?", [.integer(Int64(n))])
                    }
                }
                return 2_000
            }
            var copies: [String] = []
            for index in 0..<5 {
                let copy = directory.appendingPathComponent("copy-\(index).sqlite").path
                #expect(try Connection(path: path).backup(toFile: copy) > 0)
                copies.append(copy)
            }
            #expect(try writer.join() == 2_000)
            for copy in copies {
                let connection = try Connection(path: copy, mode: .readWrite)
                #expect(try connection.quickCheckProblem() == nil)
                let rows = try connection.scalar("SELECT count(*) FROM rows", as: Int.self)
                #expect(try connection.scalar("SELECT value FROM counter", as: Int.self) == rows)
                #expect(try connection.scalar("SELECT coalesce(max(n), 0) FROM rows", as: Int.self) == rows)
            }
            // Done writing: the copy holds everything.
            let last = directory.appendingPathComponent("last.sqlite").path
            try Connection(path: path).backup(toFile: last)
            #expect(try Connection(path: last, mode: .readWrite).scalar("SELECT count(*) FROM rows", as: Int.self) == 2_000)
        }
    }

    @Test func aBackupIntoAnUnwritablePlaceThrows() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            #expect(throws: SQLiteError.self) { try connection.backup(toFile: "/nonexistent-directory/copy.sqlite") }
        }
    }
}
