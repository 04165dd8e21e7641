#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// `bluelibrary albums ... --replica FILE` and `bluelibrary sync`: the built executable against
/// a real server process (seeded with the tutorial's five albums), which is killed and started
/// again on the same data directory in between.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) final class ReplicaCommandTests {
    let dataDirectory: String
    let directory: TemporaryDirectory
    var server: ServerProcess?
    /// The token of the server when it is locked (`startServer(.locked)`); every command run sends it.
    var token: String?
    var url: String { "http://127.0.0.1:\(server?.port ?? 1)" }
    var file: String { directory.file("replica.sqlite") }

    init() throws {
        dataDirectory = TestApp.temporaryDirectory()
        directory = try TemporaryDirectory(prefix: "bluelibrary-replica-cli")
        server = try ServerProcess(dataDirectory: dataDirectory)
    }

    /// Kills the server as a crash would (SIGKILL) and waits for it to be gone.
    func crashServer() throws {
        let server = try #require(server)
        server.signal(SIGKILL)
        #expect(server.waitForExit(timeout: 20) != nil)
        self.server = nil
    }

    /// Starts the server on the data directory; `.locked`: with a token and `access.protectReads`.
    func startServer(_ lock: ServerLock = .open) throws {
        let server = try ServerProcess(environment: lock.token.map { ["BLUELIBRARY_TOKEN": $0] } ?? [:], dataDirectory: dataDirectory)
        self.server = server
        if lock == .locked { try ServerLock.protectReads(port: server.port) }
        token = lock.token
    }

    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandRun {
        var environment = environment
        if let token, environment["BLUELIBRARY_CLIENT_TOKEN"] == nil { environment["BLUELIBRARY_CLIENT_TOKEN"] = token }
        return try CommandRun.bluelibrary(arguments, environment: environment)
    }

    /// `albums <arguments> --replica FILE`, the server's address from the environment.
    func offline(_ arguments: [String]) throws -> CommandRun {
        try run(["albums"] + arguments + ["--replica", file], environment: ["BLUELIBRARY_URL": url])
    }

    func sync(_ extra: [String] = []) throws -> CommandRun {
        try run(["sync", "--replica", file, "--url", url] + extra)
    }

    /// Every album as `albums list --all --json` prints it: from the server, or from the replica.
    func listed(fromReplica: Bool) throws -> [[String: Any]] {
        var arguments = ["albums", "list", "--all", "--json", "--limit", "500", "--url", url]
        if fromReplica { arguments += ["--replica", file] }
        let run = try run(arguments)
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        return try #require(object["items"] as? [[String: Any]])
    }

    func expectAgreement(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let local = try listed(fromReplica: true)
        let remote = try listed(fromReplica: false)
        #expect(NSArray(array: local).isEqual(to: remote), "replica \(local.map { $0["title"] ?? "" }) server \(remote.map { $0["title"] ?? "" })",
                sourceLocation: sourceLocation)
    }

    func id(at index: Int, fromReplica: Bool) throws -> String {
        try #require(try listed(fromReplica: fromReplica)[index]["id"] as? String)
    }

    @Test func offlineEditsWithTheServerDownThenSyncAfterARestartAndAnotherClientsEdits() throws {
        let first = try sync()
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.lines.first == "Created \(file), the replica of library default.")
        #expect(first.stdout.contains("(a full reload)"))
        #expect(first.lines.last == "Replica and server agree: 5 albums.")
        try expectAgreement()
        let oldSecond = try id(at: 1, fromReplica: true)

        try crashServer()
        // Reads and writes on the replica with the server down.
        let added = try offline(["add", "--title", "Low", "--artist", "David Bowie", "--year", "1977", "--index", "1"])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.hasPrefix("Added \"Low\" by David Bowie (1977) at index 1, id local-"))
        #expect(added.stdout.contains("(queued; send it with: bluelibrary sync --replica \(file))"))
        let end = try offline(["add", "--title", "Heroes", "--artist", "David Bowie", "--json"])
        #expect(end.status == 0 && end.stdout.contains("\"index\" : 6"), "\(end.stdout)")
        let deleted = try offline(["delete", "--at", "0"])
        #expect(deleted.status == 0 && deleted.stdout.hasPrefix("Deleted \"Best of Bowie\""), "\(deleted.stdout)\(deleted.stderr)")
        let moved = try offline(["move", oldSecond, "--index", "4"])
        #expect(moved.status == 0 && moved.stdout.contains("at index 4"), "\(moved.stdout)\(moved.stderr)")
        let mistake = try offline(["add", "--title", "Mistake", "--artist", "Nobody"])
        #expect(mistake.status == 0)
        let undone = try offline(["undo"])
        #expect(undone.status == 0 && undone.stdout.hasPrefix("Took back the queued add of album local-"), "\(undone.stdout)")

        let table = try offline(["list"])
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.lines.count == 7)  // header and six albums
        #expect(table.lines[1].hasPrefix("0  Low"))
        #expect(!table.stdout.contains("Mistake"))
        #expect(table.stderr.contains("4 changes queued, not yet on the server"), "\(table.stderr)")

        let refused = try sync()
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("sync failed: cannot reach the server"), "\(refused.stderr)")
        #expect(refused.stderr.contains("4 queued changes stay in \(file) for the next sync"), "\(refused.stderr)")

        // The server comes back (on another port) and another client edits meanwhile.
        try startServer()
        let other = try run(["albums", "add", "--title", "Other", "--artist", "Someone", "--index", "0", "--url", url])
        #expect(other.status == 0, "\(other.stderr)")
        let gone = try run(["albums", "delete", "--at", "5", "--url", url])
        #expect(gone.status == 0, "\(gone.stderr)")

        let second = try sync(["--json"])
        #expect(second.status == 0, "\(second.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any])
        #expect(report["pushed"] as? Int == 4 && report["agree"] as? Bool == true && report["created"] as? Bool == false)
        #expect((report["dropped"] as? [Any])?.isEmpty == true)
        #expect(report["albums"] as? Int == 6)
        try expectAgreement()
        let titles = try listed(fromReplica: false).compactMap { $0["title"] as? String }
        #expect(titles.filter { $0 == "Low" }.count == 1 && titles.contains("Heroes") && titles.contains("Other"))
        #expect(!titles.contains("Best of Bowie") && !titles.contains("Mistake"))

        // Nothing left: a second sync changes nothing and still agrees.
        let third = try sync()
        #expect(third.status == 0 && third.stdout.contains("Pushed 0 queued changes.") && !third.stdout.contains("Created"))
        let quiet = try offline(["list"])
        #expect(quiet.stderr.isEmpty, "\(quiet.stderr)")
    }

    @Test(arguments: ServerLock.allCases) func theReplicaComesFromTheEnvironmentAndAConflictIsReportedNotFatal(lock: ServerLock) throws {
        if lock == .locked {
            try crashServer()
            try startServer(.locked)
        }
        let environment = ["BLUELIBRARY_URL": url, "BLUELIBRARY_REPLICA": file]
        #expect(try run(["sync"], environment: environment).status == 0)
        let victim = try id(at: 2, fromReplica: true)
        let moved = try run(["albums", "move", victim, "--index", "0"], environment: environment)
        #expect(moved.status == 0 && moved.stdout.contains("(queued"), "\(moved.stderr)")
        // Another client deletes the album meanwhile: the move is dropped and said so.
        #expect(try run(["albums", "delete", victim, "--url", url]).status == 0)
        let synced = try run(["sync"], environment: environment)
        #expect(synced.status == 0, "\(synced.stderr)")
        #expect(synced.stdout.contains("Dropped the move of album \(victim): album \(victim) was deleted on the server"), "\(synced.stdout)")
        #expect(synced.lines.last == "Replica and server agree: 4 albums.")
        try expectAgreement()
    }

    @Test func mistakesAndFailuresSayWhatToDo() throws {
        let missing = try run(["sync", "--url", url])
        #expect(missing.status == 2 && missing.stderr.contains("sync needs --replica FILE"))
        #expect(try run(["sync", "--help"]).stdout.contains("Exit status: 0 when replica and server agree"))
        #expect(try sync().status == 0)

        let otherLibrary = try sync(["--library", "other"])
        #expect(otherLibrary.status == 1)
        #expect(otherLibrary.stderr == "bluelibrary: \(file) is the replica of library default, not other\n")

        let between = try offline(["move", "x", "--to-library", "other"])
        #expect(between.status == 2 && between.stderr.contains("--to-library needs the server"))
        #expect(try offline(["add", "--title", "T", "--artist", "A", "--client", "phone"]).status == 2)
        let unknown = try offline(["delete", "01HZY8Q6V9T3X2K7M4N5P6R7S8"])
        #expect(unknown.status == 1 && unknown.stderr == "bluelibrary: no album 01HZY8Q6V9T3X2K7M4N5P6R7S8 in the replica\n")
        let past = try offline(["delete", "--at", "9"])
        #expect(past.status == 1 && past.stderr.contains("there is no album at index 9"))
        let nothing = try offline(["undo"])
        #expect(nothing.status == 1 && nothing.stderr.contains("nothing is queued"))
        let cursor = try offline(["list", "--cursor", "bogus"])
        #expect(cursor.status == 1 && cursor.stderr.contains("is not a cursor of this replica"))

        // A page of the replica continues with the replica's own cursor, filters as the server does.
        let page = try offline(["list", "--limit", "2"])
        #expect(page.lines.last?.contains("more with: bluelibrary albums list --replica \(file) --cursor r2") == true, "\(page.stdout)")
        let rest = try offline(["list", "--limit", "2", "--cursor", "r2", "--all"])
        #expect(rest.status == 0 && rest.lines.count == 4)
        let search = try offline(["list", "--sort", "-year", "--q", "SUN", "--json"])
        let serverSearch = try run(["albums", "list", "--sort", "-year", "--q", "SUN", "--json", "--url", url])
        let items = { (text: String) in
            ((try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["items"] as? [[String: Any]]) ?? []
        }
        #expect(items(search.stdout).count == 2)
        #expect(NSArray(array: items(search.stdout)).isEqual(to: items(serverSearch.stdout)))

        // A file that is not a replica.
        try Data("not sqlite at all".utf8).write(to: URL(fileURLWithPath: directory.file("junk")))
        let junk = try run(["sync", "--replica", directory.file("junk"), "--url", url])
        #expect(junk.status == 1 && junk.stderr.hasPrefix("bluelibrary: the replica file failed: "), "\(junk.stderr)")
    }
}
