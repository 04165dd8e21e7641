#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryServer
import Foundation

/// `bluelibrary token set [--data-dir DIR | --database-url URL]`: reads the token from standard input (without
/// echo on a terminal; never from the command line, so it stays out of shell history and
/// `ps`), stores only its PBKDF2 hash in the data directory's database, and turns the lock on.
enum TokenCommand {
    static let help = """
        Usage: bluelibrary token set [--data-dir DIR | --database-url URL]

        Reads a token from standard input (typed without echo on a terminal, or piped:
        'printf %s "$TOKEN" | bluelibrary token set') and stores its salted PBKDF2-SHA256 hash
        in DIR/bluelibrary.sqlite (default: $BLUELIBRARY_DATA_DIR or ./data), or in the
        PostgreSQL database URL names (default: $BLUELIBRARY_DATABASE_URL, when set), where every
        instance on it learns it within a second. Write protection is enabled; clients then
        send 'Authorization: Bearer <token>'. Replaces any earlier token.

        The database is chosen as 'bluelibrary serve' chooses it: a flag wins over its
        environment variable, and a database URL (flag or environment) means PostgreSQL even
        when --data-dir is given (serve then keeps only its cover cache there);
        --database-url '' means SQLite in the data directory. The URL must start with
        postgres:// or postgresql://. Its password may come from the file
        $BLUELIBRARY_DATABASE_PASSWORD_FILE names, as for 'bluelibrary serve'.
        """

    static func run(_ arguments: [String]) -> Never {
        guard arguments.first == "set" else {
            if arguments.first == "--help" || arguments.first == "-h" || arguments.first == "help" {
                print(help)
                exit(0)
            }
            fail("usage: bluelibrary token set [--data-dir DIR] (the token is read from standard input)")
        }
        var dataDirectory = ProcessInfo.processInfo.environment["BLUELIBRARY_DATA_DIR"] ?? "./data"
        var databaseURL: String?
        if let value = ProcessInfo.processInfo.environment["BLUELIBRARY_DATABASE_URL"] {
            do {
                databaseURL = try ServeConfiguration.databaseURL(value)
            } catch {
                fail("BLUELIBRARY_DATABASE_URL: \(error.message)")
            }
        }
        var rest = arguments.dropFirst()
        while let word = rest.popFirst() {
            switch word {
            case "--help", "-h":
                print(help)
                exit(0)
            case "--data-dir":
                guard let value = rest.popFirst() else { fail("--data-dir needs a value") }
                dataDirectory = value
            case let w where w.hasPrefix("--data-dir="):
                dataDirectory = String(w.dropFirst("--data-dir=".count))
            case "--database-url":
                guard let value = rest.popFirst() else { fail("--database-url needs a value") }
                databaseURL = parsedURL(value)
            case let w where w.hasPrefix("--database-url="):
                databaseURL = parsedURL(String(w.dropFirst("--database-url=".count)))
            default:
                fail("unknown option '\(word)'; the token is read from standard input, never from arguments")
            }
        }
        let password: SecretFile?
        do {
            password = try ServeConfiguration.databasePassword(environment: ProcessInfo.processInfo.environment, databaseURL: databaseURL)
        } catch {
            fail(error.message)
        }
        if let warning = password?.warning { FileHandle.standardError.write(Data("bluelibrary: warning: \(warning)\n".utf8)) }
        guard let token = readToken() else { fail("no token on standard input") }
        do {
            try TokenSetting.set(AccessToken(token), dataDirectory: dataDirectory, databaseURL: databaseURL, databasePassword: password?.value)
        } catch {
            fail(error.message, code: 1)
        }
        FileHandle.standardError.write(Data("bluelibrary: token hash stored; write protection is enabled (a running server enforces it within a few seconds)\n".utf8))
        exit(0)
    }

    /// `--database-url`'s value, checked as `serve` checks it (nil: SQLite).
    private static func parsedURL(_ value: String) -> String? {
        do {
            return try ServeConfiguration.databaseURL(value)
        } catch {
            fail("--database-url: \(error.message)")
        }
    }

    /// One line from a terminal with echo off, or all of piped input; trailing newlines dropped.
    static func readToken() -> String? {
        var text: String?
        if isatty(STDIN_FILENO) == 1 {
            FileHandle.standardError.write(Data("Token: ".utf8))
            var saved = termios()
            let haveTerminal = tcgetattr(STDIN_FILENO, &saved) == 0
            if haveTerminal {
                var quiet = saved
                quiet.c_lflag &= ~tcflag_t(ECHO)
                tcsetattr(STDIN_FILENO, TCSANOW, &quiet)
            }
            text = readLine(strippingNewline: true)
            if haveTerminal { tcsetattr(STDIN_FILENO, TCSANOW, &saved) }
            FileHandle.standardError.write(Data("\n".utf8))
        } else {
            let data = FileHandle.standardInput.readDataToEndOfFile()
            text = String(decoding: data, as: UTF8.self)
        }
        guard var token = text else { return nil }
        while let last = token.last, last == "\n" || last == "\r" || last == "\r\n" { token.removeLast() }
        return token.isEmpty ? nil : token
    }
}
