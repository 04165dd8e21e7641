import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// `bluelibrary albums ...`: the built executable against the real app in-process.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class AlbumsCommandTests {
    let server: LiveServer

    init() throws { server = try LiveServer() }

    /// Runs `bluelibrary albums <arguments>` with BLUELIBRARY_URL pointing at the test server.
    func albums(_ arguments: [String], environment: [String: String]? = nil) throws -> CommandRun {
        try CommandRun.bluelibrary(["albums"] + arguments, environment: environment ?? ["BLUELIBRARY_URL": server.url])
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func listPrintsAnAlignedTable() throws {
        let run = try albums(["list"])
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 6)  // header and five albums, no "more" line
        #expect(lines[0].hasPrefix("#  TITLE"))
        #expect(lines[1].hasPrefix("0  Best of Bowie"))
        // Every column starts at the same offset on every line.
        for column in ["ARTIST", "GENRE", "YEAR", "ID"] {
            let offset = try #require(lines[0].range(of: column)).lowerBound.utf16Offset(in: lines[0])
            for line in lines.dropFirst() {
                let before = line.utf16.index(line.utf16.startIndex, offsetBy: offset - 2)
                #expect(line[before..<line.index(before, offsetBy: 2)] == "  ", "column \(column) in '\(line)'")
            }
        }
        #expect(lines[2].contains("No Doubt") && lines[2].contains("2003"))
    }

    @Test(arguments: ServerLock.allCases) func listPagesWithLimitAndAll(lock: ServerLock) throws {
        let server = try self.server.with(lock)
        func albums(_ arguments: [String], environment: [String: String]? = nil) throws -> CommandRun {
            try self.albums(arguments, environment: environment ?? server.environment)
        }
        let first = try albums(["list", "--limit", "2"])
        #expect(first.status == 0, "\(first.stderr)")
        let lines = first.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 4)
        #expect(lines[3].hasPrefix("2 albums shown; more with: bluelibrary albums list --cursor "))

        let words = lines[3].split(separator: " ").map(String.init)
        let cursor = try #require(words.firstIndex(of: "--cursor").map { words[$0 + 1] })
        let rest = try albums(["list", "--limit", "2", "--cursor", cursor, "--all", "--json"])
        #expect(rest.status == 0)
        let restItems = try #require(try json(rest.stdout)["items"] as? [[String: Any]])
        #expect(restItems.compactMap { $0["title"] as? String } == ["Nothing Like The Sun", "Staring at the Sun", "American Pie"])

        let all = try albums(["list", "--limit", "2", "--all", "--json"])
        #expect(all.status == 0)
        let object = try json(all.stdout)
        let items = try #require(object["items"] as? [[String: Any]])
        #expect(items.count == 5)
        #expect(items.compactMap { $0["index"] as? Int } == [0, 1, 2, 3, 4])
        #expect(object["next"] is NSNull)
        #expect(object["version"] as? Int != nil)
        #expect(items[0]["coverUrl"] as? String != nil && items[0]["createdAt"] as? String != nil)
    }

    @Test func listSortsAndSearches() throws {
        let run = try albums(["list", "--sort", "-year", "--q", "sun", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let items = try #require(try json(run.stdout)["items"] as? [[String: Any]])
        #expect(items.compactMap { $0["title"] as? String } == ["Staring at the Sun", "Nothing Like The Sun"])
        #expect(items.allSatisfy { $0["index"] == nil })

        let table = try albums(["list", "--sort", "title"])
        let lines = table.stdout.split(separator: "\n")
        try #require(lines.count == 6)
        #expect(lines[0].hasPrefix("TITLE"))  // no index column outside position order
        #expect(lines[1].hasPrefix("American Pie"))

        let bad = try albums(["list", "--sort", "loudness"])
        #expect(bad.status == 2 && bad.stderr.hasPrefix("bluelibrary: --sort:"))
    }

    @Test func searchFindsEveryWordAndSaysHowToGoOn() throws {
        let run = try albums(["search", "SUN", "the", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let items = try #require(try json(run.stdout)["items"] as? [[String: Any]])
        #expect(Set(items.compactMap { $0["title"] as? String }) == ["Staring at the Sun", "Nothing Like The Sun"])
        let across = try albums(["search", "madonna", "pi", "--json"])
        #expect((try json(across.stdout)["items"] as? [[String: Any]])?.compactMap { $0["title"] as? String } == ["American Pie"])
        let first = try albums(["search", "sun", "--limit", "1"])
        #expect(first.status == 0 && first.stdout.contains("more with: bluelibrary albums list --q 'sun' --cursor "), "\(first.stdout)")
        let none = try albums(["search"])
        #expect(none.status == 2 && none.stderr.contains("albums search needs the words"), "\(none.stderr)")
    }

    @Test(arguments: ServerLock.allCases) func addDeleteAndUndo(lock: ServerLock) throws {
        let server = try self.server.with(lock)
        func albums(_ arguments: [String], environment: [String: String]? = nil) throws -> CommandRun {
            try self.albums(arguments, environment: environment ?? server.environment)
        }
        let added = try albums(["add", "--title", "Low", "--artist", "David Bowie", "--genre", "Rock", "--year", "1977", "--index", "1"])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.hasPrefix("Added \"Low\" by David Bowie (1977) at index 1, id "))

        let json = try albums(["add", "--title", "Heroes", "--artist", "David Bowie", "--cover-url", "https://example.com/h.png", "--json"])
        #expect(json.status == 0)
        let heroes = try self.json(json.stdout)
        #expect(heroes["index"] as? Int == 6 && heroes["genre"] as? String == "Pop" && heroes["year"] is NSNull)
        let heroesID = try #require(heroes["id"] as? String)

        let deleted = try albums(["delete", heroesID])
        #expect(deleted.status == 0)
        #expect(deleted.stdout == "Deleted \"Heroes\" by David Bowie at index 6, id \(heroesID).\n")
        let deletedAt = try albums(["delete", "--at", "1", "--json"])
        #expect(try self.json(deletedAt.stdout)["title"] as? String == "Low")

        let undo = try albums(["undo"])
        #expect(undo.status == 0)
        #expect(undo.stdout == "Undone: re-insert 'Low' at index 1 (\"Low\" is at index 1).\n")
        let undoJSON = try albums(["undo", "--json"])
        #expect(try self.json(undoJSON.stdout)["undone"] as? String == "re-insert 'Heroes' at index 6")
        #expect(try server.allAlbums().count == 7)
    }

    @Test(arguments: ServerLock.allCases) func errorsPrintTheProblemDetailOnOneLineAndExit1(lock: ServerLock) throws {
        let server = try self.server.with(lock)
        func albums(_ arguments: [String], environment: [String: String]? = nil) throws -> CommandRun {
            try self.albums(arguments, environment: environment ?? server.environment)
        }
        let empty = try albums(["undo"])
        #expect(empty.status == 1)
        #expect(empty.stdout.isEmpty)
        #expect(empty.stderr == "bluelibrary: there is nothing to undo\n")

        let missing = try albums(["delete", "01HZY8Q6V9T3X2K7M4N5P6R7S8"])
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("bluelibrary: no album has id 01HZY8Q6V9T3X2K7M4N5P6R7S8"))
        #expect(missing.stderr.filter { $0 == "\n" }.count == 1)

        let invalid = try albums(["add", "--title", " ", "--artist", "X", "--year", "12"])
        #expect(invalid.status == 1)
        #expect(invalid.stderr.contains("title") && invalid.stderr.contains("year"))
        #expect(invalid.stderr.filter { $0 == "\n" }.count == 1)

        let refused = try albums(["list", "--url", "http://127.0.0.1:1"])
        #expect(refused.status == 1)
        #expect(refused.stderr.hasPrefix("bluelibrary: cannot reach the server: "))

        let fromEnv = try albums(["list"], environment: ["BLUELIBRARY_URL": "http://127.0.0.1:1"])
        #expect(fromEnv.status == 1)

        // Usage mistakes are exit 2.
        #expect(try albums(["add", "--title", "Only"]).status == 2)
        #expect(try albums(["delete"]).status == 2)
        #expect(try albums(["list", "--limit", "many"]).status == 2)
        #expect(try albums(["list", "--bogus"]).status == 2)
        let help = try albums(["--help"])
        #expect(help.status == 0 && help.stdout.contains("bluelibrary albums <command>"))
    }

    /// `--timeout`, else `$BLUELIBRARY_CLIENT_TIMEOUT`, else 10 s; against a server that holds
    /// every request and never answers.
    @Test func theTimeoutComesFromTheFlagElseTheEnvironment() throws {
        let silent = try GatedProxy(upstreamPort: server.port)
        silent.gated = true
        let url = "http://127.0.0.1:\(silent.port)"
        let fromEnvironment = try albums(["list"], environment: ["BLUELIBRARY_URL": url, "BLUELIBRARY_CLIENT_TIMEOUT": "0.5"])
        #expect(fromEnvironment.status == 1 && fromEnvironment.stderr.contains("no answer from the server within 0.5 s"),
                "\(fromEnvironment.stderr)")
        let flagWins = try albums(["list", "--timeout", "0.7"], environment: ["BLUELIBRARY_URL": url, "BLUELIBRARY_CLIENT_TIMEOUT": "30"])
        #expect(flagWins.status == 1 && flagWins.stderr.contains("within 0.7 s"), "\(flagWins.stderr)")
        for bad in ["soon", "0", "-1"] {
            let refused = try albums(["list"], environment: ["BLUELIBRARY_URL": url, "BLUELIBRARY_CLIENT_TIMEOUT": bad])
            #expect(refused.status == 2 && refused.stderr.contains("BLUELIBRARY_CLIENT_TIMEOUT must be a positive number of seconds, not '\(bad)'"),
                    "\(bad): \(refused.stderr)")
        }
    }
}

/// The exit status and output of one run of the built `bluelibrary` executable.
struct CommandRun {
    var status: Int32
    var stdout: String
    var stderr: String

    /// Seconds a command waits for each answer unless `environment` says otherwise: well past
    /// the CLI's 10 s default, as the suite's servers answer slowly on a loaded machine.
    static let timeout = "60"

    /// Runs `bluelibrary <arguments>` with the environment's BLUELIBRARY_ variables replaced by
    /// `environment` (and `BLUELIBRARY_CLIENT_TIMEOUT` ``timeout`` unless it sets one), `input` on stdin.
    static func bluelibrary(_ arguments: [String], environment: [String: String], input: String = "") throws -> CommandRun {
        let run = try ChildProcess.run(
            ServerProcess.executableURL.path, arguments,
            environment: ChildProcess.environment(dropping: { $0.hasPrefix("BLUELIBRARY_") },
                                                  adding: environment.merging(["BLUELIBRARY_CLIENT_TIMEOUT": timeout]) { mine, _ in mine }),
            input: Array(input.utf8))
        return CommandRun(status: run.status, stdout: String(decoding: run.stdout, as: UTF8.self),
                          stderr: String(decoding: run.stderr, as: UTF8.self))
    }

    /// The lines of stdout.
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }
}

