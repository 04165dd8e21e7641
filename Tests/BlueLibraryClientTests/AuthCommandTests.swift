import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// The `bluelibrary` client commands against a locked server (a token and `access.protectReads`):
/// where the token comes from (`BLUELIBRARY_CLIENT_TOKEN`, `--token-file FILE`, `--token-file -`),
/// the usage mistakes around it (exit 2), and a 401 (exit 3) or 429 (exit 4) ending the command
/// with one line that says what to do; `sync` keeps its queue. The happy paths on a locked
/// server are the command suites' tests parameterised by `ServerLock`.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class AuthCommandTests {
    let server: LiveServer
    let directory: TemporaryDirectory

    init() throws {
        server = try LiveServer(.locked)
        directory = try TemporaryDirectory(prefix: "bluelibrary-cli-auth")
    }

    static let wrongToken = "not-the-token-0123456789"

    /// `bluelibrary <arguments>` against the server, with `environment` (BLUELIBRARY_URL added) and `input` on stdin.
    func run(_ arguments: [String], environment: [String: String] = [:], input: String = "") throws -> CommandRun {
        try CommandRun.bluelibrary(arguments, environment: environment.merging(["BLUELIBRARY_URL": server.url]) { mine, _ in mine }, input: input)
    }

    /// A file holding `text`.
    func file(_ name: String, _ text: String) throws -> String {
        let path = directory.file(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Exactly one line on stderr, nothing on stdout.
    func expectOneLine(_ run: CommandRun, status: Int32, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(run.status == status, "\(run.stderr)", sourceLocation: sourceLocation)
        #expect(run.stdout.isEmpty, "\(run.stdout)", sourceLocation: sourceLocation)
        #expect(run.stderr.hasPrefix("bluelibrary: ") && run.stderr.filter { $0 == "\n" }.count == 1 && run.stderr.hasSuffix("\n"),
                "\(run.stderr)", sourceLocation: sourceLocation)
    }

    @Test func withoutATokenEveryClientCommandExits3SayingWhereToPutIt() throws {
        // A read through the model, a write, and the catalog commands' shared path.
        let commands = [["albums", "list"], ["albums", "add", "--title", "T", "--artist", "A"], ["libraries", "create", "jazz"],
                        ["views", "albums", "all"]]
        for command in commands {
            let refused = try run(command)
            expectOneLine(refused, status: 3)
            #expect(refused.stderr.contains("(401): set BLUELIBRARY_CLIENT_TOKEN, or pass --token-file FILE"), "\(command): \(refused.stderr)")
        }
        // An empty variable is no token (as every BLUELIBRARY_ variable): the same advice.
        let empty = try run(["albums", "list"], environment: ["BLUELIBRARY_CLIENT_TOKEN": ""])
        expectOneLine(empty, status: 3)
        #expect(empty.stderr.contains("set BLUELIBRARY_CLIENT_TOKEN"))
        #expect(try server.allAlbums().count == 5)
    }

    @Test func aWrongTokenExits3NamingWhereItCameFromNeverTheToken() throws {
        let fromEnvironment = try run(["albums", "list"], environment: ["BLUELIBRARY_CLIENT_TOKEN": Self.wrongToken])
        expectOneLine(fromEnvironment, status: 3)
        #expect(fromEnvironment.stderr.contains("the server refused the token from BLUELIBRARY_CLIENT_TOKEN (401): check"))
        let path = try file("wrong", Self.wrongToken + "\n")
        let fromFile = try run(["libraries", "list", "--token-file", path])
        expectOneLine(fromFile, status: 3)
        #expect(fromFile.stderr.contains("refused the token from --token-file \(path) (401)"))
        for run in [fromEnvironment, fromFile] { #expect(!run.stderr.contains(Self.wrongToken)) }
    }

    @Test func theTokenComesFromAFileStandardInputOrTheEnvironment() throws {
        let lf = try file("token", ServerLock.token + "\n")
        let crlf = try file("token-crlf", ServerLock.token + "\r\n")
        let bare = try file("token-bare", ServerLock.token)
        for path in [lf, crlf, bare] {
            let listed = try run(["albums", "list", "--json", "--token-file", path])
            #expect(listed.status == 0, "\(path): \(listed.stderr)")
        }
        // The file wins over the variable.
        let both = try run(["albums", "add", "--title", "From", "--artist", "File", "--token-file=\(lf)"],
                           environment: ["BLUELIBRARY_CLIENT_TOKEN": Self.wrongToken])
        #expect(both.status == 0 && both.stdout.hasPrefix("Added \"From\""), "\(both.stderr)")
        let piped = try run(["views", "create", "all", "--sources", "default", "--token-file", "-"], input: ServerLock.token + "\n")
        #expect(piped.status == 0 && piped.stdout.hasPrefix("Created view all"), "\(piped.stderr)")
        let environment = try run(["views", "albums", "all", "--json"], environment: ["BLUELIBRARY_CLIENT_TOKEN": ServerLock.token])
        #expect(environment.status == 0, "\(environment.stderr)")
        #expect(try server.allAlbums().count == 6)
    }

    @Test func aMissingEmptyOrImpossibleTokenIsAUsageMistake() throws {
        let missing = try run(["albums", "list", "--token-file", directory.file("nowhere")])
        expectOneLine(missing, status: 2)
        #expect(missing.stderr.contains("--token-file \(directory.file("nowhere")): there is no such file"))
        for text in ["", "\n", "\r\n\n"] {
            let empty = try run(["libraries", "list", "--token-file", try file("empty", text)])
            expectOneLine(empty, status: 2)
            #expect(empty.stderr.contains("is empty"), "\(empty.stderr)")
        }
        let noInput = try run(["views", "list", "--token-file", "-"])
        expectOneLine(noInput, status: 2)
        #expect(noInput.stderr.contains("standard input held no token"))
        let spaced = try run(["albums", "list", "--token-file", try file("spaced", "two words-0123456789\n")])
        expectOneLine(spaced, status: 2)
        #expect(spaced.stderr.contains("printable ASCII") && !spaced.stderr.contains("two words"))
        #expect(try run(["albums", "list", "--token-file"]).status == 2)
        // Never a value on the command line, and the value is not echoed.
        for arguments in [["--token", "secret-value-0123456789"], ["--token=secret-value-0123456789"]] {
            let refused = try run(["albums", "list"] + arguments)
            expectOneLine(refused, status: 2)
            #expect(refused.stderr.contains("--token is not taken") && refused.stderr.contains("BLUELIBRARY_CLIENT_TOKEN"))
            #expect(!refused.stderr.contains("secret-value"))
        }
    }

    @Test func aLockedOutAddressExits4WithTheSecondsToWait() throws {
        let patch = try RawHTTPClient.request(
            port: server.port, method: "PATCH", path: "/settings",
            headers: ["Authorization": "Bearer \(ServerLock.token)", "Content-Type": "application/merge-patch+json"],
            body: Array(#"{"access": {"attemptLimit": 1}}"#.utf8))
        try #require(patch.status == 200)
        let wrong = ["BLUELIBRARY_CLIENT_TOKEN": Self.wrongToken]
        #expect(try run(["albums", "list"], environment: wrong).status == 3)
        for environment in [wrong, ["BLUELIBRARY_CLIENT_TOKEN": ServerLock.token]] {
            let locked = try run(["albums", "list"], environment: environment)
            expectOneLine(locked, status: 4)
            let seconds = try #require(locked.stderr.firstRange(of: /wait (\d+) seconds?, then try again with the right token/))
            #expect(Int(locked.stderr[seconds].filter(\.isNumber)).map { $0 >= 1 } == true, "\(locked.stderr)")
            #expect(locked.stderr.contains("locked out after too many wrong tokens (429)"))
        }
    }

    @Test func aSyncRefusedWithA401KeepsTheQueueAndSaysHowManyAndWhatToDo() throws {
        let replica = directory.file("replica.sqlite")
        let token = ["BLUELIBRARY_CLIENT_TOKEN": ServerLock.token]
        let created = try run(["sync", "--replica", replica], environment: token)
        #expect(created.status == 0 && created.lines.last == "Replica and server agree: 5 albums.", "\(created.stderr)")
        // Local edits need no token.
        for title in ["One", "Two"] {
            #expect(try run(["albums", "add", "--title", title, "--artist", "Queued", "--replica", replica]).status == 0)
        }
        for environment in [[:], ["BLUELIBRARY_CLIENT_TOKEN": Self.wrongToken]] {
            let refused = try run(["sync", "--replica", replica], environment: environment)
            #expect(refused.status == 3, "\(refused.stderr)")
            #expect(refused.stderr.hasPrefix("bluelibrary: sync stopped: ") && refused.stderr.filter { $0 == "\n" }.count == 1, "\(refused.stderr)")
            #expect(refused.stderr.contains(environment.isEmpty ? "set BLUELIBRARY_CLIENT_TOKEN" : "refused the token from BLUELIBRARY_CLIENT_TOKEN"))
            #expect(refused.stderr.hasSuffix("; 2 queued changes stay in \(replica) for the next sync\n"), "\(refused.stderr)")
        }
        let listed = try run(["albums", "list", "--replica", replica])
        #expect(listed.stderr.contains("2 changes queued, not yet on the server"), "\(listed.stderr)")
        #expect(try server.allAlbums().count == 5)

        let synced = try run(["sync", "--replica", replica, "--json"], environment: token)
        #expect(synced.status == 0, "\(synced.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(synced.stdout.utf8)) as? [String: Any])
        #expect(report["pushed"] as? Int == 2 && report["agree"] as? Bool == true && (report["dropped"] as? [Any])?.isEmpty == true)
        #expect(try server.allAlbums().suffix(2).map(\.title) == ["One", "Two"])
    }

    @Test func helpDocumentsTheTokenAndItsExitCodesAndHealthcheckStaysOpen() throws {
        for command in ["albums", "libraries", "views", "sync", "keys"] {
            let help = try run([command, "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.contains("--token-file FILE") && help.stdout.contains("$BLUELIBRARY_CLIENT_TOKEN"), "\(command)")
            #expect(help.stdout.contains("3 ") && help.stdout.contains("(401") && help.stdout.contains("4 ") && help.stdout.contains("(429"),
                    "\(command): \(help.stdout)")
            #expect(help.stdout.contains("5 ") && help.stdout.contains("(403"), "\(command): \(help.stdout)")
        }
        let main = try run(["help"])
        #expect(main.stdout.contains("BLUELIBRARY_CLIENT_TOKEN") && main.stdout.contains("3 when the key is missing, wrong, expired or revoked"))
        #expect(main.stdout.contains("5 when the key lacks the scope or the library the request needs (403)"))
        // The container probe asks /readyz, which a locked server keeps open: no token needed.
        let probe = try run(["healthcheck", "--port", String(server.port)])
        #expect(probe.status == 0, "\(probe.stderr)")
    }
}
