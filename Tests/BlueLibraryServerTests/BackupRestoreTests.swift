#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import SQLite
import Storage
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// How far the writing client got, and whether it should stop.
final class WriterProgress: Sendable {
    let acknowledged = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)
}

/// `bluelibrary backup` and `restore` as operators run them: real processes, a server that
/// keeps writing while the copy is taken, and the restored copy served again and compared.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) struct BackupRestoreTests {
    static let token = "backup-test-token-42"
    static let bearer = ["Authorization": "Bearer \(token)"]

    static func call(_ port: Int, _ method: String = "GET", _ path: String, json: String? = nil,
                     headers: [String: String] = bearer) throws -> RawHTTPClient.Response {
        var headers = headers
        if json != nil { headers["Content-Type"] = method == "PATCH" ? "application/merge-patch+json" : "application/json" }
        return try RawHTTPClient.request(port: port, method: method, path: path, headers: headers, body: Array((json ?? "").utf8))
    }

    static func bluelibrary(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
        try ServerProcess.run(arguments, environment: environment)
    }

    /// A library with something in every table a backup must carry: albums in two libraries,
    /// a view, saved states, settings, undo, the change feed, the token hash.
    static func populate(_ port: Int) throws {
        #expect(try call(port, "POST", "/libraries", json: #"{"id": "jazz", "name": "Jazz"}"#).status == 201)
        for (title, year) in [("Kind of Blue", 1959), ("A Love Supreme", 1965), ("Blue Train", 1957)] {
            #expect(try call(port, "POST", "/libraries/jazz/albums",
                             json: #"{"title": "\#(title)", "artist": "Someone", "year": \#(year)}"#).status == 201)
        }
        #expect(try call(port, "DELETE", "/libraries/jazz/albums/at/1").status == 200)
        #expect(try call(port, "POST", "/views", json: #"{"id": "all", "sources": ["default", "jazz"]}"#).status == 201)
        #expect(try call(port, "PUT", "/state?client=phone", json: #"{"currentAlbumIndex": 2}"#).status == 200)
        #expect(try call(port, "PATCH", "/settings", json: #"{"paging": {"defaultLimit": 7}}"#).status == 200)
    }

    static func canonical(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    /// What a client sees of everything: compared between the live server and the restored one.
    static func snapshot(_ port: Int) throws -> [String: String] {
        var seen: [String: String] = [:]
        for path in ["/albums?limit=500", "/libraries/jazz/albums", "/libraries", "/views", "/views/all/albums?limit=500",
                     "/settings", "/state?client=phone", "/undo", "/libraries/jazz/undo", "/changes?since=0&limit=1000",
                     "/libraries/jazz/changes?since=0"] {
            let response = try call(port, "GET", path)
            #expect(response.status == 200, "\(path): \(response.text)")
            seen[path] = response.text
        }
        return seen
    }

    @Test func aBackupOfALiveServerUnderWritesRestoresToAConsistentCopy() throws {
        let live = TestApp.temporaryDirectory()
        let server = try ServerProcess(environment: ["BLUELIBRARY_TOKEN": Self.token], dataDirectory: live)
        try Self.populate(server.port)
        let seeded = try #require(try Self.call(server.port, "GET", "/albums?limit=500").json()["items"] as? [[String: Any]]).count

        // Given a client adding albums "w-1", "w-2", ... at the end, one after another
        let progress = WriterProgress()
        let port = server.port
        let finished = DispatchSemaphore(value: 0)
        let writer = Thread {
            defer { finished.signal() }
            var n = 0
            // At most 450: the restored list is read in one page of 500.
            while !progress.stop.load(ordering: .acquiring), n < 450 {
                n += 1
                guard let response = try? Self.call(port, "POST", "/albums", json: #"{"title": "w-\#(n)", "artist": "Writer"}"#),
                      response.status == 201 else { return }
                progress.acknowledged.store(n, ordering: .releasing)
            }
        }
        writer.start()
        #expect(eventually { progress.acknowledged.load(ordering: .acquiring) >= 20 })

        // When a backup is taken while it writes
        let backups = try TemporaryDirectory()
        let before = progress.acknowledged.load(ordering: .acquiring)
        let (status, report) = try Self.bluelibrary(["backup", "--data-dir", live, "--to", backups.file("live.sqlite")])
        let after = progress.acknowledged.load(ordering: .acquiring)
        #expect(eventually { progress.acknowledged.load(ordering: .acquiring) >= min(after + 10, 450) })
        progress.stop.store(true, ordering: .releasing)
        finished.wait()
        #expect(status == 0, "\(report)")
        #expect(report.contains("albums:"))
        #expect(backups.files() == ["live.sqlite"])  // no partial file left

        // Then the copy, restored and served, holds the albums of one moment: a prefix of the
        // writes, at least those acknowledged before the backup began, in order, with the version to match
        let restoredUnderWrites = TestApp.temporaryDirectory()
        let (restoreStatus, restoreReport) = try Self.bluelibrary(["restore", "--from", backups.file("live.sqlite"), "--data-dir", restoredUnderWrites])
        #expect(restoreStatus == 0, "\(restoreReport)")
        let copy = try ServerProcess(dataDirectory: restoredUnderWrites)
        let albums = try #require(try Self.call(copy.port, "GET", "/albums?limit=500").json()["items"] as? [[String: Any]])
        let written = albums.dropFirst(seeded).map { $0["title"] as? String ?? "" }
        #expect(written == (0..<written.count).map { "w-\($0 + 1)" })
        // (A write committed before the copy ended may be acknowledged just after: hence + 1.)
        #expect(written.count >= before && written.count <= after + 1)
        #expect(written.count < progress.acknowledged.load(ordering: .acquiring))
        let liveChanges = try #require(try Self.call(server.port, "GET", "/changes?since=0&limit=1000").json()["changes"] as? [[String: Any]])
        let copyChanges = try #require(try Self.call(copy.port, "GET", "/changes?since=0&limit=1000").json()["changes"] as? [[String: Any]])
        #expect(!copyChanges.isEmpty && copyChanges.count <= liveChanges.count)
        #expect(try copyChanges.map(Self.canonical) == liveChanges.prefix(copyChanges.count).map(Self.canonical))
        // The token hash came along: the copy is locked with the same token.
        #expect(try Self.call(copy.port, "POST", "/undo", headers: [:]).status == 401)

        // And once the writes have stopped, a backup restored elsewhere serves exactly what the live server does
        let (quietStatus, quietReport) = try Self.bluelibrary(["backup", "--data-dir", live, "--to", backups.file("quiet.sqlite")])
        #expect(quietStatus == 0, "\(quietReport)")
        let restored = TestApp.temporaryDirectory()
        #expect(try Self.bluelibrary(["restore", "--from", backups.file("quiet.sqlite"), "--data-dir", restored]).0 == 0)
        let twin = try ServerProcess(dataDirectory: restored)
        #expect(try Self.snapshot(twin.port) == Self.snapshot(server.port))
        #expect(try Self.call(twin.port, "GET", "/settings", headers: ["Authorization": "Bearer wrong-token-1234"]).status == 401)
    }

    @Test func restoreIsRefusedWhileAServerRunsOnTheDataDirectory() throws {
        let live = TestApp.temporaryDirectory()
        let server = try ServerProcess(environment: ["BLUELIBRARY_TOKEN": Self.token], dataDirectory: live)
        try Self.populate(server.port)
        let backups = try TemporaryDirectory()
        #expect(try Self.bluelibrary(["backup", "--data-dir", live, "--to", backups.file("b.sqlite")]).0 == 0)
        // Only its owner may read a backup: it holds the token's hash and the cursor key.
        let mode = try FileManager.default.attributesOfItem(atPath: backups.file("b.sqlite"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try Self.call(server.port, "POST", "/albums", json: #"{"title": "After", "artist": "Backup"}"#).status == 201)
        let before = try Self.snapshot(server.port)

        let (status, message) = try Self.bluelibrary(["restore", "--from", backups.file("b.sqlite"), "--data-dir", live])
        #expect(status == 1)
        #expect(message.contains("a server is running on this data directory"), "\(message)")
        #expect(try Self.snapshot(server.port) == before)

        // Once it is stopped, the restore goes through and the previous database is kept beside it.
        server.signal(SIGTERM)
        #expect(server.waitForExit(timeout: 20) == 0)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: backups.file("b.sqlite")))
        let (again, report) = try Self.bluelibrary(["restore", "--from", backups.file("b.sqlite"), "--data-dir", live])
        #expect(again == 0, "\(report)")
        // The backup is only read (it may sit on a read-only mount): no byte changed, nothing beside it.
        #expect(try Data(contentsOf: URL(fileURLWithPath: backups.file("b.sqlite"))) == bytes)
        #expect(backups.files() == ["b.sqlite"])
        #expect(!FileManager.default.fileExists(atPath: live + "/bluelibrary.sqlite.restoring"))
        #expect(FileManager.default.fileExists(atPath: live + "/bluelibrary.sqlite.before-restore"))
        let back = try ServerProcess(dataDirectory: live)
        let titles = try #require(try Self.call(back.port, "GET", "/albums?limit=500").json()["items"] as? [[String: Any]]).map { $0["title"] as? String }
        #expect(!titles.contains("After"))
    }

    /// `backup --to -` and `restore --from -`: a backup leaves a running server through standard
    /// output (as it leaves a container through `docker exec`) and comes back through standard
    /// input (`docker run -i`), so no file needs to be readable by the server's user.
    @Test func aBackupLeavesThroughStandardOutputAndComesBackThroughStandardInput() throws {
        let live = TestApp.temporaryDirectory()
        let server = try ServerProcess(environment: ["BLUELIBRARY_TOKEN": Self.token], dataDirectory: live)
        try Self.populate(server.port)
        let before = try Self.snapshot(server.port)
        let environment = ChildProcess.environment(dropping: { $0.hasPrefix("BLUELIBRARY_") }, adding: ["BLUELIBRARY_DATA_DIR": live])
        let backup = try ChildProcess.run(ServerProcess.executableURL.path, ["backup", "--to", "-"], environment: environment)
        let report = String(decoding: backup.stderr, as: UTF8.self)
        #expect(backup.status == 0, "\(report)")
        #expect(backup.stdout.starts(with: Array("SQLite format 3\0".utf8)), "the database file itself on stdout")
        #expect(report.contains("backed up") && report.contains("albums:"), "the report on stderr: \(report)")
        let left = try FileManager.default.contentsOfDirectory(atPath: live).filter { $0.contains("backup") || $0.hasSuffix(".partial") }
        #expect(left.isEmpty, "nothing of the copy is left in the data directory: \(left)")
        server.signal(SIGTERM)
        #expect(server.waitForExit(timeout: 20) == 0)

        let restored = TestApp.temporaryDirectory()
        let restore = try ChildProcess.run(ServerProcess.executableURL.path, ["restore", "--from", "-", "--data-dir", restored],
                                           environment: environment, input: backup.stdout, mergeStderr: true)
        #expect(restore.status == 0, "\(String(decoding: restore.stdout, as: UTF8.self))")
        #expect(String(decoding: restore.stdout, as: UTF8.self).contains("restored standard input"))
        let mode = try FileManager.default.attributesOfItem(atPath: restored + "/bluelibrary.sqlite")[.posixPermissions] as? Int
        #expect(mode == 0o600, "the restored database is its owner's only, as the backup was")
        let twin = try ServerProcess(dataDirectory: restored)
        #expect(try Self.snapshot(twin.port) == before)

        // Nothing, or not a database, on stdin: refused, nothing replaced.
        let empty = try ChildProcess.run(ServerProcess.executableURL.path, ["restore", "--from", "-", "--data-dir", TestApp.temporaryDirectory()],
                                         environment: environment, mergeStderr: true)
        #expect(empty.status == 1 && String(decoding: empty.stdout, as: UTF8.self).contains("standard input is empty"))
    }

    @Test func aServerDoesNotStartWhileARestoreHoldsTheDirectory() throws {
        let directory = TestApp.temporaryDirectory()
        let lock = try DataDirectoryLock(directory: directory, mode: .exclusive)
        let (status, message) = try Self.bluelibrary(["serve", "--port", "0", "--data-dir", directory])
        #expect(status == 2)
        #expect(message.contains("a restore is replacing the database"), "\(message)")
        withExtendedLifetime(lock) {}
    }

    @Test func refusalsSayWhatToDo() throws {
        let directory = TestApp.temporaryDirectory()
        let backups = try TemporaryDirectory()
        // Nothing to back up yet.
        let (missing, missingText) = try Self.bluelibrary(["backup", "--data-dir", directory, "--to", backups.file("x.sqlite")])
        #expect(missing == 1 && missingText.contains("there is no database"), "\(missingText)")
        // A backup never overwrites a file.
        _ = try SQLiteAlbumStore(path: directory + "/bluelibrary.sqlite")
        #expect(FileManager.default.createFile(atPath: backups.file("taken.sqlite"), contents: Data("keep me".utf8)))
        let (exists, existsText) = try Self.bluelibrary(["backup", "--data-dir", directory, "--to", backups.file("taken.sqlite")])
        #expect(exists == 1 && existsText.contains("exists already"), "\(existsText)")
        #expect(try String(contentsOfFile: backups.file("taken.sqlite"), encoding: .utf8) == "keep me")
        // Not a database: refused, nothing replaced.
        let (garbage, garbageText) = try Self.bluelibrary(["restore", "--from", backups.file("taken.sqlite"), "--data-dir", directory])
        #expect(garbage == 1 && garbageText.contains("restore failed"), "\(garbageText)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/bluelibrary.sqlite.before-restore"))
        // PostgreSQL has its own tools.
        let (postgres, postgresText) = try Self.bluelibrary(
            ["backup", "--to", backups.file("pg.dump")], environment: ["BLUELIBRARY_DATABASE_URL": "postgres://u:p@127.0.0.1:1/db"])
        #expect(postgres == 2 && postgresText.contains("pg_dump") && postgresText.contains("pg_restore"), "\(postgresText)")
        // Help, and a command line it does not understand.
        let (help, helpText) = try Self.bluelibrary(["backup", "--help"])
        #expect(help == 0 && helpText.contains("online backup API") && helpText.contains("pg_dump"))
        #expect(try Self.bluelibrary(["restore", "--help"]).1.contains("Refused while a server runs"))
        #expect(try Self.bluelibrary(["backup", "--data-dir", directory]).0 == 2)
        #expect(try Self.bluelibrary(["restore", "--bogus", "x"]).0 == 2)
    }

    @Test func aDamagedDatabaseIsReplacedAndKeptWithItsWAL() throws {
        let good = TestApp.temporaryDirectory()
        let server = try ServerProcess(environment: ["BLUELIBRARY_TOKEN": Self.token], dataDirectory: good)
        try Self.populate(server.port)
        let expected = try Self.snapshot(server.port)
        let backups = try TemporaryDirectory()
        #expect(try Self.bluelibrary(["backup", "--data-dir", good, "--to", backups.file("b.sqlite")]).0 == 0)

        // Not a SQLite file at all, with a stray WAL and shared-memory file beside it.
        let broken = TestApp.temporaryDirectory()
        let database = broken + "/bluelibrary.sqlite"
        let garbage = Data(repeating: 0x5A, count: 8192)
        #expect(FileManager.default.createFile(atPath: database, contents: garbage))
        #expect(FileManager.default.createFile(atPath: database + "-wal", contents: Data("old wal".utf8)))
        #expect(FileManager.default.createFile(atPath: database + "-shm", contents: Data("old shm".utf8)))
        let (status, report) = try Self.bluelibrary(["restore", "--from", backups.file("b.sqlite"), "--data-dir", broken])
        #expect(status == 0, "\(report)")
        #expect(report.contains("could not be opened") && report.contains("bluelibrary.sqlite.before-restore"), "\(report)")
        // Kept as it was; nothing of it left beside the restored file. (SQLite itself drops a WAL
        // with no valid frame, as these are, when it tries the file; a WAL it can read moves
        // with the database, to `.before-restore-wal`.)
        #expect(FileManager.default.contents(atPath: database + ".before-restore") == garbage)
        #expect(FileManager.default.contents(atPath: database + "-wal") != Data("old wal".utf8))
        #expect(FileManager.default.contents(atPath: database + "-shm") != Data("old shm".utf8))

        server.signal(SIGTERM)
        #expect(server.waitForExit(timeout: 20) == 0)
        let back = try ServerProcess(dataDirectory: broken)
        #expect(try Self.snapshot(back.port) == expected)
    }

    @Test func restoreStopsWhenTheCurrentWALCannotBeFoldedIn() throws {
        let source = TestApp.temporaryDirectory()
        _ = try SQLiteAlbumStore(path: source + "/bluelibrary.sqlite")
        let backups = try TemporaryDirectory()
        #expect(try Self.bluelibrary(["backup", "--data-dir", source, "--to", backups.file("b.sqlite")]).0 == 0)

        // Another process (here: this one) reads the current database from a snapshot while a
        // later commit sits in its WAL: a checkpoint cannot copy that commit and reset the WAL.
        let directory = TestApp.temporaryDirectory()
        let database = directory + "/bluelibrary.sqlite"
        let writer = try SQLite.Connection(path: database)
        try writer.execute("CREATE TABLE kept(x); INSERT INTO kept VALUES (1)")
        let reader = try SQLite.Connection(path: database)
        try reader.execute("BEGIN")
        #expect(try reader.query("SELECT count(*) FROM kept") { try $0.int(0) } == [1])
        try writer.execute("INSERT INTO kept VALUES (2)")

        let (status, message) = try Self.bluelibrary(["restore", "--from", backups.file("b.sqlite"), "--data-dir", directory])
        #expect(status == 1)
        #expect(message.contains("has the current database") && message.contains("cannot be folded in"), "\(message)")
        #expect(FileManager.default.fileExists(atPath: database + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: database + ".before-restore"))
        #expect(!FileManager.default.fileExists(atPath: database + ".restoring"))
        #expect(try writer.query("SELECT count(*) FROM kept") { try $0.int(0) } == [2])

        // Once the reader lets go, the restore goes through and the kept copy has both commits.
        try reader.execute("COMMIT")
        let (again, report) = try Self.bluelibrary(["restore", "--from", backups.file("b.sqlite"), "--data-dir", directory])
        #expect(again == 0, "\(report)")
        let kept = try SQLite.Connection(path: database + ".before-restore", mode: .readWrite)
        #expect(try kept.query("SELECT count(*) FROM kept") { try $0.int(0) } == [2])
    }

    @Test func aBackupWrittenByANewerVersionIsNotRestored() throws {
        let directory = TestApp.temporaryDirectory()
        let backups = try TemporaryDirectory()
        _ = try SQLiteAlbumStore(path: directory + "/bluelibrary.sqlite")
        #expect(try Self.bluelibrary(["backup", "--data-dir", directory, "--to", backups.file("new.sqlite")]).0 == 0)
        try NewerSchemaTests.recordUnknownMigration(in: backups.file("new.sqlite"))
        let target = TestApp.temporaryDirectory()
        let (status, message) = try Self.bluelibrary(["restore", "--from", backups.file("new.sqlite"), "--data-dir", target])
        #expect(status == 1)
        #expect(message.contains("newer version") && message.contains("v999-from-the-future"), "\(message)")
        #expect(!FileManager.default.fileExists(atPath: target + "/bluelibrary.sqlite"))
    }
}
