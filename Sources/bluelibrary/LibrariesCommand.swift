#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryClient
import Foundation

/// `bluelibrary libraries list|show|create|rename|delete`: the server's libraries, through
/// `BlueLibraryClient`. Output, `--json` and exit codes as `bluelibrary albums` (0 done, 1 the
/// server refused or could not be reached, 2 a bad command line, 3 and 4 a locked server's 401
/// and 429).
enum LibrariesCommand {
    static let helpText = """
        Usage: bluelibrary libraries <command> [options]

        Commands:
          list    [--json]
                  Every library (id, name, number of albums, version), ordered by id.
          show    ID [--json]
                  One library.
          create  ID [--name NAME] [--json]
                  A new, empty library. ID: lowercase letters, digits and '-', 1-40
                  characters; NAME defaults to ID.
          rename  ID --name NAME [--json]
                  A new display name (the id stays).
          delete  ID [--force]
                  Delete a library. One that holds albums or that views use needs --force
                  (its albums are deleted, the views stop showing it); 'default' cannot be
                  deleted.

        The albums of a library other than 'default': 'bluelibrary albums ... --library ID'.

        Options for every command:
          --url URL        The server (default: $BLUELIBRARY_URL, else http://127.0.0.1:8080).
          --timeout SEC    Seconds to wait for each answer (default: $BLUELIBRARY_CLIENT_TIMEOUT,
                           else 10).
        \(ClientToken.optionsHelp)

        \(ClientToken.exitStatusHelp)
        """

    static func run(_ arguments: [String]) -> Never {
        var (subcommand, options, client, json) = AlbumsCommand.begin(arguments, command: "libraries", help: helpText)
        switch subcommand {
        case "list":
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                let libraries = try client.libraries()
                if json { AlbumsCommand.printJSON(["libraries": libraries]) } else { printTable(libraries) }
            }
        case "show":
            let id = requireID(&options, "show")
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                let library = try client.library(id)
                if json { AlbumsCommand.printJSON(library) } else { printTable([library]) }
            }
        case "create":
            let name = options.value("name")
            let id = requireID(&options, "create")
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                let library = try client.createLibrary(id: id, name: name)
                if json { AlbumsCommand.printJSON(library) } else { print("Created library \(describe(library)).") }
            }
        case "rename":
            guard let name = options.value("name") else { fail("libraries rename needs --name NAME") }
            let id = requireID(&options, "rename")
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                let library = try client.renameLibrary(id, to: name)
                if json { AlbumsCommand.printJSON(library) } else { print("Renamed library \(describe(library)).") }
            }
        case "delete":
            let force = options.flag("force")
            let id = requireID(&options, "delete")
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                try client.deleteLibrary(id, force: force)
                if json { AlbumsCommand.printJSON(["deleted": id]) } else { print("Deleted library \(id).") }
            }
        default:
            fail("unknown libraries command '\(subcommand)'; try 'bluelibrary libraries --help'")
        }
    }

    /// The command's one positional word, the library id.
    static func requireID(_ options: inout AlbumsCommand.Options, _ command: String) -> String {
        guard let id = options.positional() else { fail("libraries \(command) needs a library id") }
        return id
    }

    static func describe(_ library: LibraryResource) -> String {
        let count = library.albumCount == 1 ? "1 album" : "\(library.albumCount) albums"
        return "\(library.id) (\"\(library.name)\", \(count))"
    }

    static func printTable(_ libraries: [LibraryResource]) {
        guard !libraries.isEmpty else {
            print("No libraries.")
            return
        }
        var rows = [["ID", "NAME", "ALBUMS", "VERSION"]]
        for library in libraries {
            rows.append([library.id, AlbumsCommand.clip(library.name), String(library.albumCount), String(library.version)])
        }
        AlbumsCommand.printRows(rows, numeric: ["ALBUMS", "VERSION"])
    }
}
