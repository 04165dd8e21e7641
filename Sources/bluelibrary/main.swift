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
case "token":
    TokenCommand.run(Array(arguments.dropFirst()))
case "help", "--help", "-h":
    print("""
        Usage: bluelibrary <command> [options]

        Commands:
          serve        Run the HTTP server (see 'bluelibrary serve --help').
          albums       Client: list, add, delete albums and undo (see 'bluelibrary albums --help').
          token set    Read a token from stdin, store its hash, enable write protection.
          healthcheck  Exit 0 if the local server's /readyz answers 200 (for container HEALTHCHECK).
          help         Show this text.
        """)
default:
    fail("unknown command '\(command)'; try 'bluelibrary help'")
}
