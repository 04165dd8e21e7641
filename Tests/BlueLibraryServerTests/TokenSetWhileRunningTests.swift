import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import Library
import Storage
import TestThreads
import Testing

@testable import BlueLibraryServer

/// `bluelibrary token set` on a running, unlocked server must not be undone by a later
/// `PATCH /settings`, and the server learns of it without a restart.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct TokenSetWhileRunningTests {
    static let token = "correct-horse-battery-staple"

    static func setTokenFromTheCommandLine(_ directory: String) throws {
        let run = try ChildProcess.run(
            ServerProcess.executableURL.path, ["token", "set", "--data-dir", directory],
            environment: ProcessInfo.processInfo.environment, input: Array((token + "\n").utf8))
        #expect(run.status == 0)
    }

    static func storedLock(_ directory: String) throws -> Bool {
        let store = try SQLiteAlbumStore(path: directory + "/bluelibrary.sqlite")
        return try SettingsService(store: store).current.access.passcodeEnabled
    }

    @Test func theRunningServerLearnsATokenSetFromTheCommandLine() throws {
        let directory = TestApp.temporaryDirectory()
        let app = try TestApp.make { $0.dataDirectory = directory }
        app.start()
        defer { app.shutdown() }
        let port = app.port
        #expect(try SettingsAndAuthTests.call(.port(port), "POST", "/albums", json: #"{"title": "Open", "artist": "A"}"#).status == 201)

        try Self.setTokenFromTheCommandLine(directory)
        // Within a few seconds the lock is in force, without a restart (waited for, not timed).
        var status = 0
        try eventually(timeout: .seconds(10), pollingEvery: .milliseconds(100)) {
            status = try SettingsAndAuthTests.call(.port(port), "POST", "/albums", json: #"{"title": "T", "artist": "A"}"#).status
            return status == 401
        }
        #expect(status == 401, "the server never learned the lock: \(status)")
        let anonymous = try SettingsAndAuthTests.call(.port(port), "PATCH", "/settings", json: #"{"undo": {"depth": 7}}"#)
        #expect(anonymous.status == 401)
        let patched = try SettingsAndAuthTests.call(.port(port), "PATCH", "/settings", json: #"{"undo": {"depth": 7}}"#,
                                                    headers: SettingsAndAuthTests.bearer(Self.token))
        #expect(patched.status == 200, "\(patched.text)")
        #expect(try Self.storedLock(directory), "the lock is still stored")
    }

    @Test func aSettingsWriteNeverOverwritesAccessStateItDidNotChange() throws {
        let directory = TestApp.temporaryDirectory()
        // The watcher effectively never looks: the PATCH races the command line and wins.
        let app = try TestApp.make {
            $0.dataDirectory = directory
            $0.accessPollInterval = .seconds(3600)
        }
        app.start()
        defer { app.shutdown() }
        try Self.setTokenFromTheCommandLine(directory)
        let patched = try SettingsAndAuthTests.call(.port(app.port), "PATCH", "/settings", json: #"{"undo": {"depth": 7}}"#)
        #expect(patched.status != 200, "an unauthenticated write under a lock it had not seen: \(patched.text)")
        #expect(try Self.storedLock(directory), "the stored lock survived the stale PATCH")
        // Having read the stored document, the server now enforces the lock.
        #expect(try SettingsAndAuthTests.call(.port(app.port), "PATCH", "/settings", json: #"{"undo": {"depth": 7}}"#).status == 401)
    }

    @Test func aWeakStartUpTokenStopsStartUpWithExitCode2() throws {
        for weak in ["short-token", "has a space in it", "tab\there-and-there"] {
            let (status, output) = try ServerProcess.run(["serve", "--port", "0", "--data-dir", TestApp.temporaryDirectory()],
                                                         environment: ["BLUELIBRARY_TOKEN": weak])
            #expect(status == 2, "\(weak): \(output)")
            #expect(output.hasPrefix("bluelibrary: BLUELIBRARY_TOKEN:"), "\(output)")
            #expect(output.split(separator: "\n").count == 1)
            #expect(!output.contains(weak))
        }
    }
}
