#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryClient
import Foundation
import Synchronization

/// The bearer token of the client commands (`albums`, `libraries`, `views`, `sync`): from
/// `--token-file FILE`, `--token-file -` (standard input), else `$BLUELIBRARY_CLIENT_TOKEN`.
/// Never from a command-line value, which every user of the machine sees in the process list.
/// And the one line, with its own exit code, that a 401 or 429 of the server ends a command with.
enum ClientToken {
    /// Exit code of a command the server refused for its token (401: none sent, or a wrong one).
    static let unauthorizedExitCode: Int32 = 3
    /// Exit code of a command refused because the address is locked out (429, too many wrong tokens).
    static let lockedOutExitCode: Int32 = 4
    /// Exit code of a command the server refused for what its key may do (403: a scope or a
    /// library the key lacks).
    static let forbiddenExitCode: Int32 = 5

    /// The lines every client command's `--help` lists under its options.
    static let optionsHelp = """
          --token-file FILE
                           The token of a locked server, read from FILE ('-': standard input,
                           typed without echo on a terminal); a trailing newline is dropped.
                           Default: $BLUELIBRARY_CLIENT_TOKEN. Never a value on the command
                           line (it would show in the process list).
        """

    /// The exit status paragraph of every client command's `--help`.
    static let exitStatusHelp = """
        Exit status: 0 done; 1 the server refused the request or could not be reached; 2 a
        usage mistake (an empty or unreadable token file included); 3 the server is locked and
        the key (or token) is missing, wrong, expired or revoked (401: set
        BLUELIBRARY_CLIENT_TOKEN or --token-file); 4 this address is locked out after too many
        wrong keys (429: wait the seconds the message says); 5 the key lacks the scope or the
        library the request needs (403: use a key that has it, 'bluelibrary keys self' shows
        what this one may do).
        """

    /// Where the token in use came from ("$BLUELIBRARY_CLIENT_TOKEN", "--token-file FILE"),
    /// nil when none was given; set once by `read`, for the refusal messages.
    private static let source = Mutex<String?>(nil)

    /// The token from `--token-file` (consumed from `options`) or the environment, nil when
    /// neither gives one; a usage error (exit 2) for a token file that cannot be read, is
    /// empty, or holds no possible token, and for `--token VALUE`.
    static func read(_ options: inout AlbumsCommand.Options,
                     environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        // Named, never echoed: the value would be the secret itself.
        if options.contains(option: "token") {
            fail("--token is not taken: a token on the command line shows in the process list; "
                 + "set BLUELIBRARY_CLIENT_TOKEN or use --token-file FILE ('-' for standard input)")
        }
        let found: (token: String, source: String)
        if let file = options.value("token-file") {
            found = (fromFile(file), file == "-" ? "--token-file - (standard input)" : "--token-file \(file)")
        } else if let token = environment["BLUELIBRARY_CLIENT_TOKEN"], !token.isEmpty {
            found = (token, "BLUELIBRARY_CLIENT_TOKEN")
        } else {
            return nil
        }
        guard found.token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            fail("the token from \(found.source) has a space, a control character or a non-ASCII character; "
                 + "a token is printable ASCII without spaces")
        }
        source.withLock { $0 = found.source }
        return found.token
    }

    /// The token in `path` (`-`: standard input), its trailing newlines dropped; exits 2 when
    /// it cannot be read or is empty.
    private static func fromFile(_ path: String) -> String {
        if path == "-" {
            guard let token = TokenCommand.readToken() else { fail("--token-file -: standard input held no token") }
            return token
        }
        guard !path.isEmpty else { fail("--token-file needs a file name, or '-' for standard input") }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            let reason = (error as NSError).code == NSFileReadNoSuchFileError ? "there is no such file" : "it cannot be read"
            fail("--token-file \(path): \(reason)")
        }
        var token = String(decoding: data, as: UTF8.self)
        while let last = token.last, last == "\n" || last == "\r" || last == "\r\n" { token.removeLast() }
        guard !token.isEmpty else { fail("--token-file \(path) is empty; put the server's token in it") }
        return token
    }

    /// Ends the command for `error`: a 401 or 429 with one line that says what to do and its
    /// own exit code, anything else with its description and exit code 1. `prefix` and
    /// `suffix` go around the message on that line (what a sync left queued).
    static func end(with error: BlueLibraryClientError, prefix: String = "", suffix: String = "") -> Never {
        switch error {
        case .unauthorized:
            fail(prefix + unauthorizedMessage() + suffix, code: unauthorizedExitCode)
        case let .tooManyRequests(_, retryAfter):
            fail(prefix + lockedOutMessage(retryAfter: retryAfter) + suffix, code: lockedOutExitCode)
        case let .problem(problem) where problem.status == 403:
            fail(prefix + forbiddenMessage(problem) + suffix, code: forbiddenExitCode)
        default:
            fail(prefix + error.description + suffix, code: 1)
        }
    }

    static func unauthorizedMessage() -> String {
        guard let source = source.withLock({ $0 }) else {
            return "the server is locked and wants a token (401): set BLUELIBRARY_CLIENT_TOKEN, "
                + "or pass --token-file FILE ('-' reads it from standard input)"
        }
        return "the server refused the token from \(source) (401): check that it is one of the server's keys, "
            + "not expired or revoked, or its token (the one given to 'bluelibrary token set' or BLUELIBRARY_TOKEN); "
            + "more wrong tokens lock this address out"
    }

    static func forbiddenMessage(_ problem: Problem) -> String {
        "the key does not allow this (403): \(problem.description) ('bluelibrary keys self' shows what it may do)"
    }

    static func lockedOutMessage(retryAfter: Int?) -> String {
        let wait = retryAfter.map { "wait \($0) second\($0 == 1 ? "" : "s")" } ?? "wait a while"
        return "this address is locked out after too many wrong tokens (429): \(wait), then try again with the right token"
    }
}
