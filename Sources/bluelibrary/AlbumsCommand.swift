#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryClient
import Dispatch
import Foundation
import Synchronization

/// `bluelibrary albums list|search|add|delete|move|update|apply|undo|export|import`: a client of a running server, built on
/// `BlueLibraryClient` and `AlbumListModel`. Prints an aligned table (or a sentence) by
/// default and JSON with `--json`. A failed request prints the problem's detail on one line
/// to stderr and exits 1; a bad command line exits 2; a locked server's 401 exits 3, its 429
/// 4, each with a line that says what to do (`ClientToken`).
enum AlbumsCommand {
    static let helpText = """
        Usage: bluelibrary albums <command> [options]

        Commands:
          list    [--limit N] [--sort S] [--q TEXT] [--artist A] [--genre G] [--cursor C] [--all] [--json]
                  A page of albums (--all: every page). S is position, title, artist, genre,
                  year or createdAt, with a leading '-' for descending.
          search  WORD... [--limit N] [--sort S] [--artist A] [--genre G] [--all] [--json]
                  The albums whose title, artist or genre contain every WORD (any order; the
                  last word may be the start of one; case and accents do not matter).
          add     --title T --artist A [--genre G] [--year Y] [--cover-url U] [--index I] [--json]
                  Add an album (at index I, or at the end).
          delete  ID | --at INDEX [--json]
                  Delete an album by id or by position.
          move    ID (--index I | --to-library L [--index I]) [--json]
                  Move an album to index I of its library, or into library L (at index I
                  there, or at the end). Undo a move into another library in the library
                  it came from.
        \(AlbumsBatchCommand.helpLines)
          undo    [--json]
                  Undo the last change (after an import or an apply: all of it).
        \(AlbumsCSVCommand.helpLines)

        Options for every command:
          --library ID     The library (default: "default"; see 'bluelibrary libraries --help').
          --url URL        The server (default: $BLUELIBRARY_URL, else http://127.0.0.1:8080).
          --client NAME    The client whose current album add and undo update (default: "default").
          --timeout SEC    Seconds to wait for each answer (default: $BLUELIBRARY_CLIENT_TIMEOUT,
                           else 10).
        \(ClientToken.optionsHelp)
          --replica FILE   Work on the offline replica in FILE (default: $BLUELIBRARY_REPLICA):
                           list reads it, add/delete/move change it at once and queue the change
                           for 'bluelibrary sync'; all of it works with the server down. undo
                           takes back the newest queued change. Not with move --to-library or
                           --client. A new FILE starts empty until its first sync.

        \(ClientToken.exitStatusHelp)
        """

    static func run(_ arguments: [String]) -> Never {
        var (subcommand, options, client, json) = begin(arguments, command: "albums", help: helpText)
        if let replica = ReplicaAlbumsCommand.replicaPath(&options) {
            ReplicaAlbumsCommand.run(subcommand, options: options, client: client, json: json, path: replica)
        }
        let clientName = options.value("client")
        let library = options.value("library") ?? AlbumListSource.defaultLibraryID
        let libraryOption = library == AlbumListSource.defaultLibraryID ? "" : " --library \(library)"

        let result: Result<Void, BlueLibraryClientError>
        switch subcommand {
        case "list":
            let query = options.pageQuery()
            let all = options.flag("all")
            options.finish()
            result = Result { () throws(BlueLibraryClientError) in
                try list(client, source: .library(library), query: query, all: all, json: json,
                         moreCommand: "bluelibrary albums list" + libraryOption)
            }
        case "search":
            var query = options.pageQuery()
            let all = options.flag("all")
            var words: [String] = []
            while let word = options.positional() { words.append(word) }
            options.finish()
            guard !words.isEmpty else { fail("albums search needs the words to look for, like: bluelibrary albums search pink floyd") }
            query.q = words.joined(separator: " ")
            let more = "bluelibrary albums list --q \(shellQuoted(query.q ?? ""))" + libraryOption
            result = Result { () throws(BlueLibraryClientError) in
                try list(client, source: .library(library), query: query, all: all, json: json, moreCommand: more)
            }
        case "add":
            guard let title = options.value("title"), let artist = options.value("artist") else {
                fail("albums add needs --title and --artist")
            }
            let input = AlbumInput(title: title, artist: artist, genre: options.value("genre"), year: options.int("year"),
                                   coverUrl: options.value("cover-url"))
            let index = options.int("index")
            options.finish()
            result = Result { () throws(BlueLibraryClientError) in
                let album = try client.add(input, at: index, in: .library(library), client: clientName)
                if json { printJSON(album) } else { print("Added \(describe(album)).") }
            }
        case "delete":
            let index = options.int("at")
            let id = options.positional()
            options.finish()
            guard (index == nil) != (id == nil) else { fail("albums delete needs an album id or --at INDEX (one of them)") }
            result = Result { () throws(BlueLibraryClientError) in
                let album: AlbumResource
                if let id {
                    album = try client.delete(id: id, in: library)
                } else {
                    album = try client.delete(at: index!, in: .library(library))
                }
                if json { printJSON(album) } else { print("Deleted \(describe(album)).") }
            }
        case "move":
            let index = options.int("index")
            let target = options.value("to-library")
            guard let id = options.positional() else { fail("albums move needs an album id") }
            options.finish()
            if target == nil && index == nil { fail("albums move needs --index I, --to-library L, or both") }
            result = Result { () throws(BlueLibraryClientError) in
                let album: AlbumResource
                if let target {
                    album = try client.move(id: id, from: library, toLibrary: target, at: index)
                } else {
                    album = try client.move(id: id, to: index!, in: library)
                }
                if json { printJSON(album) } else { print("Moved \(describe(album)).") }
            }
        case "undo":
            options.finish()
            result = Result { () throws(BlueLibraryClientError) in
                let undone = try client.undo(client: clientName, in: library)
                if json {
                    printJSON(undone)
                } else if let album = undone.album, let index = album.index {
                    print("Undone: \(undone.undone) (\"\(album.title)\" is at index \(index)).")
                } else {
                    print("Undone: \(undone.undone).")
                }
            }
        case "update":
            result = AlbumsBatchCommand.update(client, library: library, json: json, options: &options)
        case "apply":
            result = AlbumsBatchCommand.apply(client, library: library, json: json, options: &options)
        case "export":
            result = AlbumsCSVCommand.export(client, library: library, options: &options)
        case "import":
            result = AlbumsCSVCommand.importFile(client, library: library, json: json, options: &options)
        default:
            fail("unknown albums command '\(subcommand)'; try 'bluelibrary albums --help'")
        }
        if case let .failure(error) = result { ClientToken.end(with: error) }
        exit(0)
    }

    // MARK: - Shared by the client commands

    /// A refusal that names fields (a bad line of a file): each on a line of its own on stderr,
    /// written by `line`, then the problem's summary, exit 1. Any other error is rethrown.
    static func failListingFields(_ error: BlueLibraryClientError, _ line: (Problem.FieldError) -> String)
        throws(BlueLibraryClientError) -> Never
    {
        guard let problem = error.problem, !problem.errors.isEmpty else { throw error }
        for entry in problem.errors {
            FileHandle.standardError.write(Data((line(entry) + "\n").utf8))
        }
        fail(problem.detail, code: 1)
    }

    /// `text` as one word for a POSIX shell: in single quotes, each `'` written `'\''`.
    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// The client for `--url` (else `$BLUELIBRARY_URL`, else the local default) and `--timeout`.
    /// What every command group (`albums`, `libraries`, `views`) does first: `--help` or no
    /// subcommand prints `help` and exits 0; else the subcommand, its options, the client
    /// (`--url`, `--timeout`) and whether `--json` was given.
    static func begin(_ arguments: [String], command: String, help: String)
        -> (subcommand: String, options: Options, client: BlueLibraryClient, json: Bool)
    {
        guard let subcommand = arguments.first, !["help", "--help", "-h"].contains(subcommand) else {
            print(help)
            exit(0)
        }
        var options = Options(Array(arguments.dropFirst()), command: command)
        if options.flag("help") || options.flag("h") {
            print(help)
            exit(0)
        }
        let client = connect(&options)
        let json = options.flag("json")  // consumed before the options are handed on
        return (subcommand, options, client, json)
    }

    /// The client for `--url`, `--timeout` and the token (`--token-file`, `$BLUELIBRARY_CLIENT_TOKEN`).
    static func connect(_ options: inout Options) -> BlueLibraryClient {
        let environment = ProcessInfo.processInfo.environment
        let url = options.value("url") ?? environment["BLUELIBRARY_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? "http://127.0.0.1:8080"
        let timeout = options.double("timeout") ?? environmentTimeout(environment["BLUELIBRARY_CLIENT_TIMEOUT"]) ?? 10
        let token = ClientToken.read(&options, environment: environment)
        do {
            return try BlueLibraryClient(url: url, timeout: timeout, token: token)
        } catch {
            fail("--url: \(error.description)")
        }
    }

    /// A non-empty `$BLUELIBRARY_CLIENT_TIMEOUT` as seconds (exit 2 when it is not a positive number).
    static func environmentTimeout(_ text: String?) -> Double? {
        guard let text, !text.isEmpty else { return nil }
        guard let seconds = Double(text), seconds > 0, seconds.isFinite else {
            fail("BLUELIBRARY_CLIENT_TIMEOUT must be a positive number of seconds, not '\(text)'")
        }
        return seconds
    }

    /// Runs `body` and exits: 0 when it succeeded; else the error on stderr and exit code 1,
    /// or for a 401/429 what to do about the token and its own code (`ClientToken.end`).
    static func perform(_ body: () throws(BlueLibraryClientError) -> Void) -> Never {
        do throws(BlueLibraryClientError) {
            try body()
        } catch {
            ClientToken.end(with: error)
        }
        exit(0)
    }

    // MARK: - list

    /// Prints a page of `source`'s list (every page with `all`); when more remain, a line says
    /// how to continue: `moreCommand` with `--cursor`.
    /// With `replica`, the pages come from it (`source` is ignored).
    static func list(_ client: BlueLibraryClient, source: AlbumListSource = .defaultLibrary, query: AlbumPageQuery, all: Bool,
                     json: Bool, moreCommand: String, replica: LibraryReplica? = nil) throws(BlueLibraryClientError) {
        var result: AlbumPageResource
        if let replica, query.cursor != nil {
            // A replica's cursor: plain pages of the replica.
            var page = try replicaPage(replica, query)
            result = page.resource
            while all, let next = page.next {
                page = try replicaPage(replica, query.continuing(at: next))
                result.items += page.items
                result.next = page.next
            }
        } else if query.cursor != nil {
            // Continuing from a printed cursor: plain pages, since the model always starts at the first.
            var page = try client.list(query, in: source)
            result = page.resource
            while all, let next = page.next {
                page = try client.list(query.continuing(at: next), in: source)
                result.items += page.items
                result.next = page.next
            }
        } else {
            let model = replica.map { AlbumListModel(replica: $0, query: query) } ?? AlbumListModel(client: client, source: source, query: query)
            let waiter = LoadWaiter()
            model.addListener(waiter)
            try waiter.run(model, more: false, timeout: client.timeout)
            while all && model.hasMore {
                try waiter.run(model, more: true, timeout: client.timeout)
            }
            let snapshot = model.snapshot
            result = AlbumPageResource(items: snapshot.items, next: snapshot.next, version: snapshot.version ?? 0, total: snapshot.total,
                                       versions: snapshot.versions)
        }
        let items = result.items
        if json {
            printJSON(result)
            return
        }
        guard !items.isEmpty else {
            print("No albums.")
            return
        }
        printTable(items)
        if let next = result.next {
            print("\n\(items.count) albums shown; more with: \(moreCommand) --cursor \(next) (or --all)")
        }
    }

    static func replicaPage(_ replica: LibraryReplica, _ query: AlbumPageQuery) throws(BlueLibraryClientError) -> AlbumPage {
        do throws(ReplicaError) {
            return try ReplicaAlbumsCommand.wait { () async throws(ReplicaError) in try await replica.page(query) }
        } catch {
            throw .replica(error.description)
        }
    }

    /// Albums as a table: an index column when any has an index, a LIBRARY column when any says
    /// its library (a view's page).
    static func printTable(_ albums: [AlbumResource]) {
        let showIndex = albums.contains { $0.index != nil }
        let showLibrary = albums.contains { $0.library != nil }
        var header = ["TITLE", "ARTIST", "GENRE", "YEAR", "ID"]
        if showLibrary { header.insert("LIBRARY", at: 4) }
        if showIndex { header.insert("#", at: 0) }
        var rows = [header]
        for album in albums {
            var row = [clip(album.title), clip(album.artist), clip(album.genre), album.year.map(String.init) ?? "-", album.id]
            if showLibrary { row.insert(album.library ?? "", at: 4) }
            if showIndex { row.insert(album.index.map(String.init) ?? "", at: 0) }
            rows.append(row)
        }
        printRows(rows, numeric: ["#", "YEAR"])
    }

    /// Prints `rows` (the first is the header) in aligned columns, two spaces apart; the
    /// columns named in `numeric` right-aligned, the rest left-aligned.
    static func printRows(_ rows: [[String]], numeric: Set<String>) {
        guard let header = rows.first else { return }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            var line = ""
            for (column, cell) in row.enumerated() {
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                // Numbers right-aligned (index, year), text left-aligned.
                let isNumber = numeric.contains(header[column])
                line += (column == 0 ? "" : "  ") + (isNumber ? pad + cell : cell + (column == row.count - 1 ? "" : pad))
            }
            print(line)
        }
    }

    static func clip(_ text: String, to width: Int = 40) -> String {
        let flat = text.split(whereSeparator: \.isNewline).joined(separator: " ")
        return flat.count <= width ? flat : String(flat.prefix(width - 1)) + "…"
    }

    static func describe(_ album: AlbumResource) -> String {
        let year = album.year.map { " (\($0))" } ?? ""
        let index = album.index.map { " at index \($0)" } ?? ""
        let library = album.library.map { " in library \($0)" } ?? ""
        return "\"\(album.title)\" by \(album.artist)\(year)\(index)\(library), id \(album.id)"
    }

    static func printJSON(_ value: some Encodable) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { fail("cannot encode the answer as JSON", code: 1) }
        print(String(decoding: data, as: UTF8.self))
    }

    // MARK: - Waiting for the model

    /// Blocks the command's thread until the model's load ends; callbacks arrive on the
    /// model's own queue, so this thread is free to wait.
    final class LoadWaiter: AlbumListModelListener {
        private let done = DispatchSemaphore(value: 0)
        private let failure = Mutex<BlueLibraryClientError?>(nil)

        func run(_ model: AlbumListModel, more: Bool, timeout: Double) throws(BlueLibraryClientError) {
            switch model.load(more: more) {
            case .noMorePages: return
            case .started, .joined, .queued: break
            }
            if done.wait(timeout: .now() + timeout + 5) == .timedOut {
                model.cancel()
                throw .timeout(seconds: timeout)
            }
            if let error = failure.withLock({ $0 }) { throw error }
        }

        func didFinishLoad(_ model: AlbumListModel) { done.signal() }

        func didFailLoad(_ model: AlbumListModel, error: BlueLibraryClientError) {
            failure.withLock { $0 = error }
            done.signal()
        }

        func didCancelLoad(_ model: AlbumListModel) {
            failure.withLock { $0 = .cancelled }
            done.signal()
        }
    }

    // MARK: - Options

    /// `--name value`, `--name=value`, flags, and at most one positional word; anything left
    /// over is a usage error.
    struct Options {
        private var words: [String]
        /// The command whose `--help` a usage error points to (`albums`, `libraries`, `views`).
        let command: String

        init(_ words: [String], command: String = "albums") {
            self.words = words
            self.command = command
        }

        mutating func value(_ name: String) -> String? {
            for (position, word) in words.enumerated() {
                if word == "--\(name)" {
                    guard position + 1 < words.count else { fail("--\(name) needs a value") }
                    let value = words[position + 1]
                    words.removeSubrange(position...(position + 1))
                    return value
                }
                if word.hasPrefix("--\(name)=") {
                    words.remove(at: position)
                    return String(word.dropFirst(name.count + 3))
                }
            }
            return nil
        }

        mutating func int(_ name: String) -> Int? {
            guard let text = value(name) else { return nil }
            guard let number = Int(text) else { fail("--\(name) must be a whole number, not '\(text)'") }
            return number
        }

        mutating func double(_ name: String) -> Double? {
            guard let text = value(name) else { return nil }
            guard let number = Double(text), number > 0 else { fail("--\(name) must be a positive number of seconds, not '\(text)'") }
            return number
        }

        mutating func flag(_ name: String) -> Bool {
            let spelled = name.count == 1 ? "-\(name)" : "--\(name)"
            guard let position = words.firstIndex(of: spelled) else { return false }
            words.remove(at: position)
            return true
        }

        /// The options of a paged album list: `--limit`, `--sort`, `--q`, `--artist`, `--genre`,
        /// `--cursor` (`albums list`, on the server or a replica, and `views albums`).
        mutating func pageQuery() -> AlbumPageQuery {
            var query = AlbumPageQuery()
            query.limit = int("limit")
            if let sort = value("sort") {
                guard let parsed = AlbumSort(sort) else {
                    fail("--sort: use position, title, artist, genre, year, createdAt or relevance (with --q), with '-' before it for descending; not '\(sort)'")
                }
                query.sort = parsed
            }
            query.q = value("q")
            query.artist = value("artist")
            query.genre = value("genre")
            query.cursor = value("cursor")
            return query
        }

        /// Whether `--name` or `--name=...` is among the words (left in place).
        func contains(option name: String) -> Bool {
            words.contains { $0 == "--\(name)" || $0.hasPrefix("--\(name)=") }
        }

        mutating func positional() -> String? {
            guard let position = words.firstIndex(where: { !$0.hasPrefix("-") }) else { return nil }
            return words.remove(at: position)
        }

        func finish() {
            if let word = words.first { fail("unexpected '\(word)'; try 'bluelibrary \(command) --help'") }
        }
    }
}
