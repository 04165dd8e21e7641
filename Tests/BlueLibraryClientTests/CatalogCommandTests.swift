import BlueLibraryClient
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// `bluelibrary libraries ...`, `albums --library` / `albums move`, and every client command's usage errors:
/// the built executable against the real app in-process.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class CatalogCommandTests {
    let server: LiveServer

    init() throws { server = try LiveServer() }

    func run(_ arguments: [String], on server: LiveServer? = nil) throws -> CommandRun {
        try CommandRun.bluelibrary(arguments, environment: (server ?? self.server).environment)
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func helpAndUsageMistakes() throws {
        let libraries = try run(["libraries", "--help"])
        #expect(libraries.status == 0 && libraries.stdout.contains("bluelibrary libraries <command>"))
        #expect(libraries.stdout.contains("--force"))
        let views = try run(["views", "help"])
        #expect(views.status == 0 && views.stdout.contains("bluelibrary views <command>") && views.stdout.contains("--no-filter"))
        #expect(try run(["views", "create", "--help"]).stdout.contains("--sources"))
        #expect(try run(["help"]).stdout.contains("libraries"))

        // Usage mistakes are exit 2, with a line that says what to fix.
        let noID = try run(["libraries", "create"])
        #expect(noID.status == 2 && noID.stderr == "bluelibrary: libraries create needs a library id\n")
        #expect(try run(["libraries", "rename", "jazz"]).status == 2)
        #expect(try run(["libraries", "frobnicate"]).status == 2)
        let extra = try run(["libraries", "list", "--bogus"])
        #expect(extra.status == 2 && extra.stderr.contains("try 'bluelibrary libraries --help'"))
        let noSources = try run(["views", "create", "all"])
        #expect(noSources.status == 2 && noSources.stderr.contains("--sources"))
        #expect(try run(["views", "create", "all", "--sources", "a,,b"]).status == 2)
        #expect(try run(["views", "update", "all"]).status == 2)
        #expect(try run(["views", "update", "all", "--genre", "Jazz", "--no-filter"]).status == 2)
        #expect(try run(["views", "albums"]).status == 2)
        #expect(try run(["albums", "move", "X1"]).status == 2)
    }

    @Test(arguments: ServerLock.allCases) func librariesListCreateRenameAndDelete(lock: ServerLock) throws {
        let server = try self.server.with(lock)
        func run(_ arguments: [String]) throws -> CommandRun { try self.run(arguments, on: server) }
        let created = try run(["libraries", "create", "jazz", "--name", "Jazz"])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stdout == "Created library jazz (\"Jazz\", 0 albums).\n")
        #expect(try json(try run(["libraries", "create", "blues", "--json"]).stdout)["name"] as? String == "blues")

        let list = try run(["libraries", "list"])
        #expect(list.status == 0)
        #expect(list.lines.map { $0.split(separator: " ").first.map(String.init) ?? "" } == ["ID", "blues", "default", "jazz"])
        #expect(list.lines[2].split(separator: " ").prefix(3) == ["default", "default", "5"])
        let listed = try #require(try json(try run(["libraries", "list", "--json"]).stdout)["libraries"] as? [[String: Any]])
        #expect(listed.compactMap { $0["albumCount"] as? Int } == [0, 5, 0])

        let renamed = try run(["libraries", "rename", "jazz", "--name", "Jazz & Blues"])
        #expect(renamed.stdout == "Renamed library jazz (\"Jazz & Blues\", 0 albums).\n")
        #expect(try run(["libraries", "show", "jazz"]).lines.last?.hasPrefix("jazz  Jazz & Blues") == true)

        let taken = try run(["libraries", "create", "jazz"])
        #expect(taken.status == 1 && taken.stderr.hasPrefix("bluelibrary: ") && taken.stderr.filter { $0 == "\n" }.count == 1)
        let bad = try run(["libraries", "create", "Bad Id"])
        #expect(bad.status == 1)

        let added = try run(["albums", "add", "--library", "jazz", "--title", "Kind of Blue", "--artist", "Miles Davis", "--year", "1959"])
        #expect(added.status == 0 && added.stdout.hasPrefix("Added \"Kind of Blue\" by Miles Davis (1959) at index 0, id "), "\(added.stderr)")
        let jazzList = try run(["albums", "list", "--library", "jazz", "--json"])
        #expect(try #require(try json(jazzList.stdout)["items"] as? [[String: Any]]).count == 1)

        let refused = try run(["libraries", "delete", "jazz"])
        #expect(refused.status == 1 && refused.stderr.hasPrefix("bluelibrary: "))
        #expect(try run(["libraries", "delete", "default", "--force"]).status == 1)
        let deleted = try run(["libraries", "delete", "jazz", "--force"])
        #expect(deleted.status == 0 && deleted.stdout == "Deleted library jazz.\n")
        let missing = try run(["libraries", "show", "jazz"])
        #expect(missing.status == 1)
    }

    @Test(arguments: ServerLock.allCases) func albumsMoveIntoAnotherLibraryAndUndoInTheOneItLeft(lock: ServerLock) throws {
        let server = try self.server.with(lock)
        func run(_ arguments: [String]) throws -> CommandRun { try self.run(arguments, on: server) }
        #expect(try run(["libraries", "create", "jazz"]).status == 0)
        let first = try server.client.album(at: 0)
        let moved = try run(["albums", "move", first.id, "--to-library", "jazz", "--index", "0"])
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(moved.stdout == "Moved \"Best of Bowie\" by David Bowie (1992) at index 0 in library jazz, id \(first.id).\n")
        #expect(try server.client.library("jazz").albumCount == 1)
        let within = try run(["albums", "move", try server.client.album(at: 3).id, "--index", "0", "--json"])
        #expect(try json(within.stdout)["index"] as? Int == 0)
        #expect(try run(["albums", "undo"]).status == 0)
        #expect(try run(["albums", "undo"]).status == 0)
        #expect(try server.client.album(at: 0).id == first.id)
        #expect(try server.client.library("jazz").albumCount == 0)
    }
}
