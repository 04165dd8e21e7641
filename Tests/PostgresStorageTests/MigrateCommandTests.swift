import Foundation
import HTTPTestSupport
import Postgres
import Storage
import TestThreads
import Testing

/// `bluelibrary migrate` as an operator runs it: the built executable, a data directory, a URL.
@Suite("bluelibrary migrate", .timeLimit(.minutes(2)), .ownThreads)
struct MigrateCommandTests {
    private func migrate(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let run = try ChildProcess.run(
            ServerProcess.executableURL.path, ["migrate"] + arguments, environment: ProcessInfo.processInfo.environment)
        return (run.status, String(decoding: run.stdout, as: UTF8.self), String(decoding: run.stderr, as: UTF8.self))
    }

    @Test("copies a data directory, refuses to overwrite, replaces with --force")
    func endToEnd() throws {
        let directory = try TemporaryDirectory()
        let source = try SourceFixture.make(at: directory.file("bluelibrary.sqlite"))
        let libraries = try SourceFixture.libraries(of: source)
        let database = try TestDatabase()

        let first = try migrate(["--from", directory.path, "--to", database.url])
        #expect(first.status == 0, "\(first.errors)")
        for library in libraries where !library.deleted {
            #expect(first.output.contains("library \(library.name): \(library.albums.count) albums, version \(library.version)"))
        }
        #expect(first.output.contains("library gone (deleted)"))
        #expect(first.output.contains("Verified"))
        #expect(!first.output.contains(database.url), "the URL (it may hold a password) is not echoed")

        let refused = try migrate(["--from", directory.path, "--to", database.url])
        #expect(refused.status == 1)
        #expect(refused.errors.contains("--force"))
        #expect(refused.errors.contains("albums: "), "it says what the target holds")

        let forced = try migrate(["--from=\(directory.path)", "--to=\(database.url)", "--force"])
        #expect(forced.status == 0, "\(forced.errors)")
        #expect(forced.output.contains("replacing"))
        let count = try database.pool().withConnection { try $0.scalar("SELECT COUNT(*) FROM albums", as: Int.self) }
        #expect(count == libraries.reduce(0) { $0 + $1.albums.count })
    }

    @Test("a missing source or option is refused before anything is written")
    func refusals() throws {
        let directory = try TemporaryDirectory()
        let database = try TestDatabase()
        let missing = try migrate(["--from", directory.path, "--to", database.url])
        #expect(missing.status == 1)
        #expect(missing.errors.contains("no database at"))
        let tables = try database.pool().withConnection {
            try $0.scalar("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'", as: Int.self)
        }
        #expect(tables == 0, "no schema was created for a missing source")
        #expect(try migrate(["--from", directory.path]).status == 2)
        #expect(try migrate(["--bogus"]).status == 2)
    }
}
