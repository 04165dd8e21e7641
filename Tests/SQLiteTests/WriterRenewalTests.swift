import Foundation
import TestThreads
import Testing
@testable import SQLite

/// The writer's handle is renewed after a large transaction (memory a handle grows for one
/// transaction, such as FTS5's table of pending entries, would cost every later write), and a
/// renewed handle keeps the settings, the WAL hook and the data.
@Suite(.ownThreads) struct WriterRenewalTests {
    @Test func renewKeepsTheSettingsMadeForLife() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.runForLife("PRAGMA cache_size=-1234")
            try connection.run("CREATE TABLE kept (a)")
            try connection.renew()
            #expect(try connection.scalar("PRAGMA cache_size", as: Int.self) == -1234)
            #expect(try connection.scalar("SELECT count(*) FROM kept", as: Int.self) == 0)
        }
    }

    @Test func aLargeTransactionStartsTheNextOnAFreshHandle() throws {
        try withDatabasePath { path in
            let database = try Database(path: path)
            let counter = database.installWALFrameCounter()
            try database.setWriterSetting("PRAGMA cache_size=-4321")
            // A TEMP table lives with its handle: it shows whether the handle changed.
            try database.writeWithoutTransaction { try $0.run("CREATE TEMP TABLE marker (a)") }
            try database.write { db in
                try db.run("CREATE TABLE small (a)")
                try db.run("INSERT INTO small VALUES (1)")
            }
            #expect(try database.writeWithoutTransaction { try $0.scalar("SELECT count(*) FROM temp.marker", as: Int.self) } == 0)
            // More than `renewAfterPages` pages in one transaction
            let blob = [UInt8](repeating: 7, count: 4000)
            try database.write { db in
                try db.run("CREATE TABLE big (b BLOB)")
                for _ in 0..<(WriterQueue.renewAfterPages + 500) { try db.run("INSERT INTO big VALUES (?)", [.blob(blob)]) }
            }
            let marker = try database.writeWithoutTransaction { db in
                try db.scalar("SELECT count(*) FROM sqlite_temp_master WHERE name = 'marker'", as: Int.self)
            }
            #expect(marker == 0)
            #expect(try database.writeWithoutTransaction { try $0.scalar("PRAGMA cache_size", as: Int.self) } == -4321)
            let before = counter.frames
            try database.write { try $0.run("INSERT INTO small VALUES (2)") }
            #expect(counter.frames > before)  // the WAL hook followed the handle
            #expect(try database.read { try $0.scalar("SELECT count(*) FROM big", as: Int.self) } == WriterQueue.renewAfterPages + 500)
        }
    }
}
