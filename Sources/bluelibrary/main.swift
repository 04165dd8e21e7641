#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryServer
import Dispatch
import Foundation

/// `bluelibrary serve` runs the server; `bluelibrary help` explains.
let arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.first ?? "serve"

func fail(_ message: String, code: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("bluelibrary: \(message)\n".utf8))
    exit(code)
}

switch command {
case "serve":
    ServeCommand.run(ServeCommand.configuration(from: Array(arguments.dropFirst())))
case "healthcheck":
    HealthcheckCommand.run(Array(arguments.dropFirst()))
case "albums":
    AlbumsCommand.run(Array(arguments.dropFirst()))
case "sync":
    SyncCommand.run(Array(arguments.dropFirst()))
case "libraries":
    LibrariesCommand.run(Array(arguments.dropFirst()))
case "views":
    ViewsCommand.run(Array(arguments.dropFirst()))
case "keys":
    KeysCommand.run(Array(arguments.dropFirst()))
case "token":
    TokenCommand.run(Array(arguments.dropFirst()))
case "migrate":
    MigrateCommand.run(Array(arguments.dropFirst()))
case "backup":
    BackupCommand.runBackup(Array(arguments.dropFirst()))
case "restore":
    BackupCommand.runRestore(Array(arguments.dropFirst()))
case "version", "--version":
    print("bluelibrary \(BlueLibraryVersion.current)")
case "help", "--help", "-h":
    print("""
        Usage: bluelibrary <command> [options]

        Commands:
          serve        Run the HTTP server (see 'bluelibrary serve --help').
          albums       Client: list, add, delete, move albums and undo (see 'bluelibrary albums --help').
          sync         Client: sync an offline replica (albums --replica FILE) with the server
                       (see 'bluelibrary sync --help').
          libraries    Client: list, create, rename, delete libraries (see 'bluelibrary libraries --help').
          views        Client: list, create, update, delete views and page through their albums
                       (see 'bluelibrary views --help').
          keys         Client: list, create, update, delete API keys, and show the key in use
                       (see 'bluelibrary keys --help'); 'keys create --data-dir DIR' writes a
                       key into the database with no server.
          token set    Read a token from stdin, store its hash, enable write protection.
          migrate      Copy a SQLite data directory into PostgreSQL (see 'bluelibrary migrate --help').
          backup       Copy the SQLite database of a data directory, even while a server runs on it
                       (see 'bluelibrary backup --help').
          restore      Put a backup back in place while no server runs (see 'bluelibrary restore --help').
          healthcheck  Exit 0 if the local server's /readyz answers 200 (for container HEALTHCHECK;
                       it asks the address the server wrote to its data directory).
          version      Print the version (also --version; GET / says it too).
          help         Show this text.

        The client commands (albums, sync, libraries, views, keys) send the key (or token) of a
        locked server from $BLUELIBRARY_CLIENT_TOKEN or --token-file FILE ('-': standard input),
        never from a command-line value; they exit 1 when the server refuses a request or cannot
        be reached, 2 for a usage mistake, 3 when the key is missing, wrong, expired or revoked
        (401), 4 when this address is locked out after too many wrong keys (429),
        5 when the key lacks the scope or the library the request needs (403). healthcheck
        needs no key (/readyz is open).
        """)
default:
    fail("unknown command '\(command)'; try 'bluelibrary help'")
}
