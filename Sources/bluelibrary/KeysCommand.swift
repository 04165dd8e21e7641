#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryClient
import BlueLibraryServer
import Essentials
import Foundation

/// `bluelibrary keys list|show|create|update|delete|self`: the server's API keys, through
/// `BlueLibraryClient` (an admin key for every library manages them; `self` works with any).
/// And `keys create --data-dir DIR | --database-url URL`: the key written straight into the
/// database, with no server, as `bluelibrary token set` writes a token. Output, `--json` and
/// exit codes as `bluelibrary albums`; a new key's secret alone goes to stdout.
enum KeysCommand {
    static let helpText = """
        Usage: bluelibrary keys <command> [options]

        Commands:
          list    [--json]
                  Every key: id, name, scopes, libraries, expiry, creation time (never a
                  secret).
          show    ID [--json]
                  One key.
          create  --name NAME --scope SCOPE [--scope SCOPE ...] [--library LIB ...]
                  [--expires TIME] [--json]
                  A new key. Its secret (the whole key, 'bl_' and 52 characters) is printed
                  on stdout this once and never again (the server keeps only its hash); what
                  was created is said on stderr. SCOPE: read (lists, albums, covers, events),
                  write (album changes, undo, imports; includes read) or admin (settings,
                  libraries, views, keys; includes write). --library limits the key to
                  those libraries (repeat it; default: every library). TIME: RFC 3339, like
                  2027-01-01T00:00:00Z (default: never expires).
          update  ID [--name NAME] [--scope SCOPE ...] [--library LIB ... | --all-libraries]
                  [--expires TIME | --no-expiry] [--json]
                  Change what is given (the secret stays): --scope replaces the scopes,
                  --library the libraries; --all-libraries lifts the restriction,
                  --no-expiry the expiry.
          delete  ID
                  Revoke a key: it stops working at once.
          self    [--json]
                  The key this command sends: its scopes and libraries, and whether the
                  server's lock is on.

        A key is used like the token of earlier versions (which is the admin key 'token'):
        put it in $BLUELIBRARY_CLIENT_TOKEN or a --token-file. The server refuses to delete or
        narrow the last admin key for every library while its lock is on.

        Offline create (no server): 'keys create' with --data-dir DIR or --database-url URL
        writes the key straight into that database, as 'bluelibrary token set' writes a token;
        only the presence of one of these two options chooses this form, and --url,
        --timeout and --token-file are then refused. The database is chosen as 'token set'
        chooses it (a database URL, flag or $BLUELIBRARY_DATABASE_URL, means PostgreSQL even
        with --data-dir; --database-url '' means SQLite in DIR; the password may come from
        $BLUELIBRARY_DATABASE_PASSWORD_FILE). A running server on that database learns the key
        within a second. An admin key for every library turns the lock on, as 'token set'
        does; any other key leaves the lock as it is. stderr says which.

        Options for every command but the offline create:
          --url URL        The server (default: $BLUELIBRARY_URL, else http://127.0.0.1:8080).
          --timeout SEC    Seconds to wait for each answer (default: $BLUELIBRARY_CLIENT_TIMEOUT,
                           else 10).
        \(ClientToken.optionsHelp)

        \(ClientToken.exitStatusHelp)
        """

    static func run(_ arguments: [String]) -> Never {
        if arguments.first == "create", arguments.contains(where: isOfflineOption) {
            createOffline(Array(arguments.dropFirst()))
        }
        var (subcommand, options, client, json) = AlbumsCommand.begin(arguments, command: "keys", help: helpText)
        if options.contains(option: "data-dir") || options.contains(option: "database-url") {
            fail("only 'keys create' works on the database directly; 'keys \(subcommand)' asks the server (--url)")
        }
        switch subcommand {
        case "list":
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                let keys = try client.keys()
                if json { printJSON(["keys": keys]) } else { printTable(keys) }
            }
        case "show":
            let id = requireID(&options, "show")
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                let key = try client.key(id: id)
                if json { printJSON(key) } else { printTable([key]) }
            }
        case "create":
            let input = creation(&options)
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                let key = try client.createKey(name: input.name, scopes: input.scopes, libraries: input.libraries, expiresAt: input.expiresAt)
                guard let secret = key.secret else {
                    throw .decoding(status: 201, message: "the new key came without its secret")
                }
                if json { printJSON(key) } else { print(secret) }
                note("created key \(describe(key)); this is the only time its secret is shown: keep it now")
            }
        case "update":
            let name = options.value("name")
            let scopes = scopes(&options)
            let libraries = libraries(&options)
            let allLibraries = options.flag("all-libraries")
            let expiresAt = expiry(&options)
            let noExpiry = options.flag("no-expiry")
            let id = requireID(&options, "update")
            options.finish()
            if libraries != nil && allLibraries { fail("keys update takes --library or --all-libraries, not both") }
            if expiresAt != nil && noExpiry { fail("keys update takes --expires or --no-expiry, not both") }
            let newLibraries: KeyLibraries? = allLibraries ? .all : libraries.map { .only($0) }
            let newExpiry: KeyExpiry? = noExpiry ? .never : expiresAt.map { .at($0) }
            if name == nil && scopes == nil && newLibraries == nil && newExpiry == nil {
                fail("keys update needs --name, --scope, --library, --all-libraries, --expires or --no-expiry")
            }
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                let key = try client.updateKey(id: id, name: name, scopes: scopes, libraries: newLibraries, expiresAt: newExpiry)
                if json { printJSON(key) } else { print("Updated key \(describe(key)).") }
            }
        case "delete":
            let id = requireID(&options, "delete")
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                try client.deleteKey(id: id)
                if json { printJSON(["deleted": id]) } else { print("Deleted key \(id); it no longer works.") }
            }
        case "self":
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                let me = try client.whoAmI()
                if json { printJSON(me) } else { printSelf(me) }
            }
        default:
            fail("unknown keys command '\(subcommand)'; try 'bluelibrary keys --help'")
        }
    }

    // MARK: - Offline create

    static func isOfflineOption(_ word: String) -> Bool {
        ["--data-dir", "--database-url"].contains { word == $0 || word.hasPrefix($0 + "=") }
    }

    /// `keys create --data-dir DIR | --database-url URL ...`: exits 0 with the secret on
    /// stdout, 1 when the database refuses, 2 for a usage mistake (bad fields included).
    static func createOffline(_ arguments: [String]) -> Never {
        var options = AlbumsCommand.Options(arguments, command: "keys")
        if options.flag("help") || options.flag("h") {
            print(helpText)
            exit(0)
        }
        for serverOption in ["url", "timeout", "token-file", "token"] where options.contains(option: serverOption) {
            fail("--\(serverOption) is for a key made by the server; with --data-dir or --database-url the key is written into the database directly")
        }
        let environment = ProcessInfo.processInfo.environment
        let dataDirectory = options.value("data-dir") ?? environment["BLUELIBRARY_DATA_DIR"] ?? "./data"
        let databaseURL: String?
        if let flag = options.value("database-url") {
            databaseURL = parsedURL(flag, what: "--database-url")
        } else if let value = environment["BLUELIBRARY_DATABASE_URL"] {
            databaseURL = parsedURL(value, what: "BLUELIBRARY_DATABASE_URL")
        } else {
            databaseURL = nil
        }
        let json = options.flag("json")
        let input = creation(&options)
        options.finish()
        let password: SecretFile?
        do {
            password = try ServeConfiguration.databasePassword(environment: environment, databaseURL: databaseURL)
        } catch {
            fail(error.message)
        }
        if let warning = password?.warning { note("warning: \(warning)") }
        if let problem = KeySetting.problem(name: input.name, scopes: input.scopes.map(\.rawValue), libraries: input.libraries,
                                            expiresAt: input.expiresAt) {
            fail(problem)
        }
        let created: KeySetting.Created
        do {
            created = try KeySetting.create(
                name: input.name, scopes: input.scopes.map(\.rawValue), libraries: input.libraries, expiresAt: input.expiresAt,
                dataDirectory: dataDirectory, databaseURL: databaseURL, databasePassword: password?.value)
        } catch {
            fail(error.message, code: 1)
        }
        let key = KeyResource(
            id: created.id, name: created.name, scopes: created.scopes, libraries: created.libraries, expiresAt: created.expiresAt,
            createdAt: created.createdAt, secret: created.secret)
        if json { printJSON(key) } else { print(created.secret) }
        note("created key \(describe(key)) in the database; this is the only time its secret is shown: keep it now")
        switch (created.lockWasOn, created.lockIsOn) {
        case (false, true):
            note("the lock is now on, as with 'bluelibrary token set': writes (and with access.protectReads reads) need a key; a running server enforces it within a second")
        case (true, _):
            note("the lock was already on; it stays on")
        case (false, false):
            note("the lock stays off (only an admin key for every library turns it on): until it is on, every client may do everything, key or not")
        }
        exit(0)
    }

    /// `--database-url`'s (or the environment's) value, checked as `serve` checks it (nil: SQLite).
    private static func parsedURL(_ value: String, what: String) -> String? {
        do {
            return try ServeConfiguration.databaseURL(value)
        } catch {
            fail("\(what): \(error.message)")
        }
    }

    // MARK: - Options

    struct Creation {
        var name: String
        var scopes: [KeyScope]
        var libraries: [String]?
        var expiresAt: Date?
    }

    /// The options of `create`: `--name` and `--scope` required.
    static func creation(_ options: inout AlbumsCommand.Options) -> Creation {
        guard let name = options.value("name") else { fail("keys create needs --name NAME (what the key is for)") }
        guard let scopes = scopes(&options) else { fail("keys create needs --scope read, write or admin") }
        return Creation(name: name, scopes: scopes, libraries: libraries(&options), expiresAt: expiry(&options))
    }

    /// Every `--scope` (each may be a comma list), nil when none was given.
    static func scopes(_ options: inout AlbumsCommand.Options) -> [KeyScope]? {
        var scopes: [KeyScope] = []
        while let text = options.value("scope") {
            for word in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let scope = KeyScope(rawValue: word.trimmingCharacters(in: .whitespaces)) else {
                    fail("--scope: read, write or admin, not '\(text)'")
                }
                if !scopes.contains(scope) { scopes.append(scope) }
            }
        }
        return scopes.isEmpty ? nil : scopes
    }

    /// Every `--library` (each may be a comma list), nil when none was given.
    static func libraries(_ options: inout AlbumsCommand.Options) -> [String]? {
        var libraries: [String] = []
        while let text = options.value("library") {
            for word in text.split(separator: ",", omittingEmptySubsequences: false) {
                let id = word.trimmingCharacters(in: .whitespaces)
                guard !id.isEmpty else { fail("--library: library ids (repeat the option or separate them by commas), not '\(text)'") }
                libraries.append(id)
            }
        }
        return libraries.isEmpty ? nil : libraries
    }

    /// `--expires TIME` (RFC 3339), nil when not given.
    static func expiry(_ options: inout AlbumsCommand.Options) -> Date? {
        guard let text = options.value("expires") else { return nil }
        guard let date = Timestamp.parse(text) else { fail("--expires: an RFC 3339 time like 2027-01-01T00:00:00Z, not '\(text)'") }
        return date
    }

    /// The command's one positional word, the key id.
    static func requireID(_ options: inout AlbumsCommand.Options, _ command: String) -> String {
        guard let id = options.positional() else { fail("keys \(command) needs a key id (like bl_k3v9q2xa; 'keys list' shows them)") }
        return id
    }

    // MARK: - Output

    /// A line on stderr, `bluelibrary: ` first.
    static func note(_ message: String) {
        FileHandle.standardError.write(Data("bluelibrary: \(message)\n".utf8))
    }

    /// As `AlbumsCommand.printJSON`, with times as RFC 3339 text (as the server sends them).
    static func printJSON(_ value: some Encodable) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Timestamp.format(date))
        }
        guard let data = try? encoder.encode(value) else { fail("cannot encode the answer as JSON", code: 1) }
        print(String(decoding: data, as: UTF8.self))
    }

    static func scopesText(_ scopes: [String]) -> String { scopes.isEmpty ? "none" : scopes.joined(separator: ",") }
    static func librariesText(_ libraries: [String]?) -> String { libraries.map { $0.joined(separator: ",") } ?? "all" }
    static func expiryText(_ date: Date?) -> String { date.map(Timestamp.format) ?? "never" }

    static func describe(_ key: KeyResource) -> String {
        "\(key.id) (\"\(key.name)\"; scopes \(scopesText(key.scopes)); libraries \(librariesText(key.libraries)); expires \(expiryText(key.expiresAt)))"
    }

    static func printTable(_ keys: [KeyResource]) {
        guard !keys.isEmpty else {
            print("No keys.")
            return
        }
        var rows = [["ID", "NAME", "SCOPES", "LIBRARIES", "EXPIRES", "CREATED"]]
        for key in keys {
            rows.append([key.id, AlbumsCommand.clip(key.name), scopesText(key.scopes), librariesText(key.libraries),
                         expiryText(key.expiresAt), Timestamp.format(key.createdAt)])
        }
        AlbumsCommand.printRows(rows, numeric: [])
    }

    static func printSelf(_ me: KeySelfResource) {
        if let key = me.key {
            print("Key: \(key.id) (\"\(key.name)\")")
            print("Expires: \(expiryText(key.expiresAt))")
        } else {
            print(me.locked ? "Key: none sent" : "Key: none (the lock is off: every client may do everything)")
        }
        print("Scopes: \(scopesText(me.scopes))")
        print("Libraries: \(librariesText(me.libraries))")
        print("Lock: \(me.locked ? "on" : "off")")
    }
}
