import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import Storage
import TestThreads
import Testing

@testable import BlueLibraryServer

/// `bluelibrary token set` chooses its database as `serve` does (a flag over its environment
/// variable) and checks a database URL with `serve`'s rule.
@Suite(.timeLimit(.minutes(1)), .ownThreads) struct TokenCommandTests {
    static let token = "correct-horse-battery-staple"

    private func tokenSet(_ arguments: [String], databaseURL: String?) throws -> (status: Int32, output: String) {
        var environment = ProcessInfo.processInfo.environment
        environment["BLUELIBRARY_DATABASE_URL"] = databaseURL
        let run = try ChildProcess.run(
            ServerProcess.executableURL.path, ["token", "set"] + arguments, environment: environment,
            input: Array((Self.token + "\n").utf8), mergeStderr: true)
        return (run.status, String(decoding: run.stdout, as: UTF8.self))
    }

    @Test func anEmptyDatabaseURLFlagOverridesTheEnvironmentAndMeansSQLite() throws {
        let directory = TestApp.temporaryDirectory()
        // Nothing listens on port 1: had the environment's URL been used, the command would fail.
        let run = try tokenSet(["--data-dir", directory, "--database-url", ""], databaseURL: "postgres://127.0.0.1:1/none")
        #expect(run.status == 0, "\(run.output)")
        let store = try SQLiteAlbumStore(path: directory + "/bluelibrary.sqlite")
        #expect(try store.tokenHash() != nil)
    }

    @Test func aURLThatIsNotPostgreSQLIsRefusedWithServesMessage() throws {
        let directory = TestApp.temporaryDirectory()
        let flag = try tokenSet(["--data-dir", directory, "--database-url", "mysql://user:secret@host/db"], databaseURL: nil)
        #expect(flag.status != 0)
        #expect(flag.output.contains("--database-url: database URL must start with postgres:// or postgresql://"), "\(flag.output)")
        #expect(!flag.output.contains("secret"), "the URL (it may hold a password) is not repeated")

        let environment = try tokenSet(["--data-dir", directory], databaseURL: "sqlite:///tmp/x")
        #expect(environment.status != 0)
        #expect(environment.output.contains("BLUELIBRARY_DATABASE_URL: database URL must start with postgres://"), "\(environment.output)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/bluelibrary.sqlite"), "nothing was written")
    }
}
