#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryClient
import Foundation

/// `bluelibrary views list|show|create|update|delete|albums`: composite views (one paged list
/// over several libraries), through `BlueLibraryClient` and `AlbumListModel`. Output, `--json`
/// and exit codes as `bluelibrary albums` (0 done, 1 the server refused or could not be
/// reached, 2 a bad command line, 3 and 4 a locked server's 401 and 429).
enum ViewsCommand {
    static let helpText = """
        Usage: bluelibrary views <command> [options]

        Commands:
          list    [--json]
                  Every view: id, name, its libraries in order, its filter, its revision.
          show    ID [--json]
                  One view, with each library's current version.
          create  ID --sources LIB,LIB,... [--name NAME] [FILTER] [--json]
                  A new view over 1 to 32 libraries, shown in the order given.
          update  ID [--name NAME] [--sources LIB,...] [FILTER | --no-filter] [--json]
                  Change a view. Any FILTER option replaces the whole filter; --no-filter
                  removes it.
          delete  ID
                  Delete a view (its libraries and albums stay).
          albums  ID [--limit N] [--sort S] [--q TEXT] [--artist A] [--genre G] [--cursor C] [--all] [--json]
                  A page of the view's albums (--all: every page), with the library each
                  album is in. In position order the libraries follow one another in the
                  view's order, and '#' is the position in the view; S as for
                  'bluelibrary albums list' (position, title, artist, genre, year, createdAt, '-'
                  before it for descending) merges the libraries by that value.

        FILTER (all given must match): --q TEXT (title or artist contains it), --artist A,
        --genre G, --year-from Y, --year-to Y.

        Options for every command:
          --url URL        The server (default: $BLUELIBRARY_URL, else http://127.0.0.1:8080).
          --timeout SEC    Seconds to wait for each answer (default: $BLUELIBRARY_CLIENT_TIMEOUT,
                           else 10).
        \(ClientToken.optionsHelp)

        \(ClientToken.exitStatusHelp)
        """

    static func run(_ arguments: [String]) -> Never {
        var (subcommand, options, client, json) = AlbumsCommand.begin(arguments, command: "views", help: helpText)
        switch subcommand {
        case "list":
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                let views = try client.views()
                if json { AlbumsCommand.printJSON(["views": views]) } else { printTable(views) }
            }
        case "show":
            let id = requireID(&options, "show")
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                let view = try client.view(id)
                if json { AlbumsCommand.printJSON(view) } else { printDetail(view) }
            }
        case "create":
            let name = options.value("name")
            guard let sources = sources(&options) else { fail("views create needs --sources LIB,LIB,...") }
            let filter = filter(&options) ?? ViewFilter()
            let id = requireID(&options, "create")
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                let view = try client.createView(ViewInput(id: id, name: name, sources: sources, filter: filter))
                if json { AlbumsCommand.printJSON(view) } else { print("Created view \(describe(view)).") }
            }
        case "update":
            let name = options.value("name")
            let sources = sources(&options)
            let given = filter(&options)
            let noFilter = options.flag("no-filter")
            let id = requireID(&options, "update")
            options.finish()
            if given != nil && noFilter { fail("views update takes filter options or --no-filter, not both") }
            let update = ViewUpdate(name: name, sources: sources, filter: noFilter ? ViewFilter() : given)
            if update == ViewUpdate() { fail("views update needs --name, --sources, a filter option or --no-filter") }
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                let view = try client.updateView(id, update)
                if json { AlbumsCommand.printJSON(view) } else { print("Updated view \(describe(view)).") }
            }
        case "delete":
            let id = requireID(&options, "delete")
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                try client.deleteView(id)
                if json { AlbumsCommand.printJSON(["deleted": id]) } else { print("Deleted view \(id).") }
            }
        case "albums":
            let query = options.pageQuery()
            let all = options.flag("all")
            let id = requireID(&options, "albums")
            options.finish()
            var more = "bluelibrary views albums \(id)"
            for (name, value) in query.queryItems where name != "cursor" { more += " --\(name) \(shellWord(value))" }
            AlbumsCommand.perform { [more] () throws(BlueLibraryClientError) in
                try AlbumsCommand.list(client, source: .view(id), query: query, all: all, json: json, moreCommand: more)
            }
        default:
            fail("unknown views command '\(subcommand)'; try 'bluelibrary views --help'")
        }
    }

    /// The command's one positional word, the view id.
    static func requireID(_ options: inout AlbumsCommand.Options, _ command: String) -> String {
        guard let id = options.positional() else { fail("views \(command) needs a view id") }
        return id
    }

    /// `--sources a,b,c` as a list (nil when not given); empty names are a usage error.
    static func sources(_ options: inout AlbumsCommand.Options) -> [String]? {
        guard let text = options.value("sources") else { return nil }
        let sources = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard !sources.contains(where: \.isEmpty) else { fail("--sources: library ids separated by commas, not '\(text)'") }
        return sources
    }

    /// The filter options given, or nil when none was.
    static func filter(_ options: inout AlbumsCommand.Options) -> ViewFilter? {
        let filter = ViewFilter(q: options.value("q"), artist: options.value("artist"), genre: options.value("genre"),
                                yearFrom: options.int("year-from"), yearTo: options.int("year-to"))
        return filter.isEmpty ? nil : filter
    }

    /// `value` as one shell word (quoted when it has anything but letters, digits and `-_.,`).
    static func shellWord(_ value: String) -> String {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { scalar in
            CharacterSet.alphanumerics.contains(scalar) || "-_.,".unicodeScalars.contains(scalar)
        }
        return plain ? value : "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    static func describe(_ view: ViewResource) -> String {
        "\(view.id) (\"\(view.name)\" over \(view.sources.joined(separator: ", "))\(filterText(view.filter).map { "; \($0)" } ?? ""))"
    }

    /// `genre=Jazz year>=1960`, or nil for no filter.
    static func filterText(_ filter: ViewFilter) -> String? {
        var parts: [String] = []
        if let q = filter.q { parts.append("q=\(q)") }
        if let artist = filter.artist { parts.append("artist=\(artist)") }
        if let genre = filter.genre { parts.append("genre=\(genre)") }
        if let yearFrom = filter.yearFrom { parts.append("year>=\(yearFrom)") }
        if let yearTo = filter.yearTo { parts.append("year<=\(yearTo)") }
        return parts.isEmpty ? nil : parts.joined(separator: " ")
    }

    static func printTable(_ views: [ViewResource]) {
        guard !views.isEmpty else {
            print("No views.")
            return
        }
        var rows = [["ID", "NAME", "SOURCES", "FILTER", "REVISION"]]
        for view in views {
            rows.append([view.id, AlbumsCommand.clip(view.name), view.sources.joined(separator: ","), filterText(view.filter) ?? "-",
                         String(view.revision)])
        }
        AlbumsCommand.printRows(rows, numeric: ["REVISION"])
    }

    static func printDetail(_ view: ViewResource) {
        print("View \(view.id) (\"\(view.name)\"), revision \(view.revision)")
        print("Filter: \(filterText(view.filter) ?? "none")")
        var rows = [["#", "LIBRARY", "VERSION"]]
        for (position, source) in view.sources.enumerated() {
            rows.append([String(position + 1), source, view.versions?[source].map(String.init) ?? "-"])
        }
        AlbumsCommand.printRows(rows, numeric: ["#", "VERSION"])
    }
}
