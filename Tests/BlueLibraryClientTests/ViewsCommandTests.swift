import BlueLibraryClient
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// `bluelibrary views ...`: the built executable against the real app in-process.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class ViewsCommandTests {
    let server: LiveServer

    init() throws { server = try LiveServer() }

    func run(_ arguments: [String], on server: LiveServer? = nil) throws -> CommandRun {
        try CommandRun.bluelibrary(arguments, environment: (server ?? self.server).environment)
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test(arguments: ServerLock.allCases) func viewsCreateListPageUpdateAndDelete(lock: ServerLock) throws {
        let server = try self.server.with(lock)
        func run(_ arguments: [String]) throws -> CommandRun { try self.run(arguments, on: server) }
        #expect(try run(["libraries", "create", "jazz"]).status == 0)
        for title in ["Kind of Blue", "A Love Supreme"] {
            #expect(try run(["albums", "add", "--library", "jazz", "--title", title, "--artist", "Band", "--genre", "Jazz"]).status == 0)
        }
        let created = try run(["views", "create", "all", "--sources", "default,jazz", "--name", "All"])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stdout == "Created view all (\"All\" over default, jazz).\n")
        let filtered = try run(["views", "create", "jazzy", "--sources", "jazz", "--genre", "Jazz", "--year-from", "1950"])
        #expect(filtered.stdout == "Created view jazzy (\"jazzy\" over jazz; genre=Jazz year>=1950).\n")

        let list = try run(["views", "list"])
        #expect(list.lines.first?.split(separator: " ").map(String.init) == ["ID", "NAME", "SOURCES", "FILTER", "REVISION"])
        #expect(list.lines.count == 3 && list.lines.contains { $0.hasPrefix("all ") && $0.contains("default,jazz") })
        let shown = try run(["views", "show", "all"])
        #expect(shown.lines.first?.hasPrefix("View all (\"All\"), revision ") == true && shown.lines.count == 5)

        let page = try run(["views", "albums", "all", "--limit", "4"])
        #expect(page.status == 0, "\(page.stderr)")
        #expect(page.lines[0].split(separator: " ").map(String.init) == ["#", "TITLE", "ARTIST", "GENRE", "YEAR", "LIBRARY", "ID"])
        #expect(page.lines[1].hasPrefix("0  Best of Bowie"))
        let hint = try #require(page.lines.last)
        #expect(hint.hasPrefix("4 albums shown; more with: bluelibrary views albums all --limit 4 --cursor "))
        let words = hint.split(separator: " ").map(String.init)
        let cursor = try #require(words.firstIndex(of: "--cursor").map { words[$0 + 1] })
        let rest = try run(["views", "albums", "all", "--limit", "4", "--cursor", cursor, "--all", "--json"])
        let restItems = try #require(try json(rest.stdout)["items"] as? [[String: Any]])
        #expect(restItems.compactMap { $0["library"] as? String } == ["default", "jazz", "jazz"])
        #expect(restItems.compactMap { $0["index"] as? Int } == [4, 5, 6])

        let all = try #require(try json(try run(["views", "albums", "all", "--all", "--limit", "2", "--sort", "title", "--json"]).stdout)["items"] as? [[String: Any]])
        let titles = all.compactMap { $0["title"] as? String }
        #expect(titles.count == 7 && titles == titles.sorted())

        let updated = try run(["views", "update", "jazzy", "--no-filter", "--sources", "jazz,default"])
        #expect(updated.stdout == "Updated view jazzy (\"jazzy\" over jazz, default).\n", "\(updated.stderr)")
        let unknown = try run(["views", "create", "bad", "--sources", "nowhere"])
        #expect(unknown.status == 1 && unknown.stderr.contains("sources"))
        #expect(try run(["views", "delete", "jazzy"]).stdout == "Deleted view jazzy.\n")
        #expect(try run(["views", "show", "jazzy"]).status == 1)
    }
}
