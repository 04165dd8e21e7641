import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// Two `bluelibrary serve` processes on one PostgreSQL database, talked to directly (no proxy:
/// the nginx, concurrency, fault and SIGKILL tests are MultiInstanceTests'): what one instance
/// acknowledged, the other answers with at once; events, idempotency keys, settings and
/// lockouts are one across them.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads)
final class MultiInstanceServerTests {
    static let token = "multi-instance-token-0123"

    /// Instances A and B on a fresh database.
    static func instances(token: Bool = false) throws -> (ServerProcess, ServerProcess) {
        let url = try PostgresServer.shared().makeDatabase()
        var environment = ["BLUELIBRARY_DATABASE_URL": url, "BLUELIBRARY_DATABASE_POOL_SIZE": "4"]
        if token { environment["BLUELIBRARY_TOKEN"] = Self.token }
        let arguments = ["--access-log", "off", "--seed", "off"]
        let a = try ServerProcess(arguments: arguments, environment: environment, dataDirectory: TestApp.temporaryDirectory())
        let b = try ServerProcess(arguments: arguments, environment: environment, dataDirectory: TestApp.temporaryDirectory())
        return (a, b)
    }

    static func request(_ port: Int, _ path: String, method: String = "GET", json: String? = nil,
                        headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
        var headers = headers
        if json != nil { headers["Content-Type"] = "application/json" }
        return try RawHTTPClient.request(port: port, method: method, path: path, headers: headers, body: Array((json ?? "").utf8))
    }

    static func add(_ port: Int, _ title: String, headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
        try request(port, "/albums", method: "POST", json: #"{"title": "\#(title)", "artist": "Tester"}"#, headers: headers)
    }

    static func titles(_ response: RawHTTPClient.Response) throws -> [String] {
        let items = try response.json()["items"] as? [[String: Any]] ?? []
        return items.compactMap { $0["title"] as? String }
    }

    @Test func aWriteOnOneInstanceIsReadOnTheOtherAtOnceNeverAStale304() throws {
        let (a, b) = try Self.instances()
        var expected: [String] = []
        for round in 0..<15 {
            let before = try Self.request(b.port, "/albums")
            #expect(before.status == 200)
            let etag = try #require(before.header("ETag"))
            let added = try Self.add(a.port, "Round \(round)")
            #expect(added.status == 201)
            expected.append("Round \(round)")
            let after = try Self.request(b.port, "/albums", headers: ["If-None-Match": etag])
            #expect(after.status == 200, "round \(round): B must not answer 304 with A's write acknowledged")
            #expect(try Self.titles(after) == expected)
            #expect(after.header("ETag") != etag)
            let id = try #require(try added.json()["id"] as? String)
            #expect(try Self.request(b.port, "/albums/\(id)").status == 200)
        }
        // A change of B's own is seen by A the same way.
        let listA = try Self.request(a.port, "/albums")
        let first = try #require(try (listA.json()["items"] as? [[String: Any]])?.first?["id"] as? String)
        #expect(try Self.request(b.port, "/albums/\(first)", method: "DELETE").status == 200)
        let afterDelete = try Self.request(a.port, "/albums", headers: ["If-None-Match": try #require(listA.header("ETag"))])
        #expect(afterDelete.status == 200)
        #expect(try !Self.titles(afterDelete).contains("Round 0"))
    }

    @Test func eventsOfAWriteOnOneInstanceReachTheOtherWithTheSameIdsAndResumeAnywhere() throws {
        let (a, b) = try Self.instances()
        let onB = try SSEClient(port: b.port)
        let onA = try SSEClient(port: a.port)
        let first = try #require(try Self.add(a.port, "First").json()["id"] as? String)
        let second = try #require(try Self.add(a.port, "Second").json()["id"] as? String)
        func albumEvents(_ stream: SSEClient, _ count: Int) throws -> [SSEEvent] {
            var found: [SSEEvent] = []
            while found.count < count {
                guard let event = try stream.next() else { break }
                if event.name.hasPrefix("album.") { found.append(event) }
            }
            return found
        }
        let seenOnB = try albumEvents(onB, 2)
        #expect(seenOnB.map(\.id) == ["1", "2"])
        #expect(seenOnB.map { $0.json["id"] as? String } == [first, second])
        let seenOnA = try albumEvents(onA, 2)
        #expect(seenOnA.map(\.id) == seenOnB.map(\.id) && seenOnA.map(\.data) == seenOnB.map(\.data), "one stream, whichever instance")

        // Resumed on A with the id B gave: what came after, as B sent it.
        let resumed = try SSEClient(port: a.port, lastEventID: "1")
        #expect(try albumEvents(resumed, 1).map(\.data) == [seenOnB[1].data])
        // A write on B reaches a stream on A.
        _ = try Self.add(b.port, "Third")
        #expect(try albumEvents(onA, 1).map(\.id) == ["3"])
    }

    @Test func aRetriedPostWithTheSameKeyOnTheOtherInstanceReplaysTheFirstAnswer() throws {
        let (a, b) = try Self.instances()
        let key = ["Idempotency-Key": "retry-elsewhere-1"]
        let first = try Self.add(a.port, "Once", headers: key)
        #expect(first.status == 201)
        let retry = try Self.add(b.port, "Once", headers: key)
        #expect(retry.status == first.status)
        #expect(retry.body == first.body)
        #expect(retry.header("Location") == first.header("Location"))
        #expect(try Self.titles(try Self.request(b.port, "/albums")) == ["Once"], "one album, not two")
    }

    @Test func undoAndSavedStatesAreOneAcrossInstances() throws {
        let (a, b) = try Self.instances()
        #expect(try Self.add(a.port, "Kept").status == 201)
        let second = try #require(try Self.add(a.port, "Undone").json()["id"] as? String)
        // The add made on A is undone through B.
        let undone = try Self.request(b.port, "/undo", method: "POST")
        #expect(undone.status == 200, "\(undone.text)")
        #expect(try Self.titles(try Self.request(a.port, "/albums")) == ["Kept"])
        #expect(try Self.request(a.port, "/albums/\(second)").status == 404)
        // A state saved on B is read on A.
        let saved = try Self.request(b.port, "/state?client=car", method: "PUT", json: #"{"currentAlbumIndex": 0}"#)
        #expect(saved.status == 200, "\(saved.text)")
        let read = try Self.request(a.port, "/state?client=car")
        #expect(read.status == 200)
        let readState = try read.json(), savedState = try saved.json()
        #expect(readState["currentAlbumIndex"] as? Int == 0)
        #expect(readState["albumID"] as? String == savedState["albumID"] as? String)
    }

    @Test func aStateSavedOnOneInstanceIsAnnouncedOnTheOther() throws {
        let (a, b) = try Self.instances()
        #expect(try Self.add(a.port, "One").status == 201)
        let onB = try SSEClient(port: b.port)
        #expect(try Self.request(a.port, "/state?client=car", method: "PUT", json: #"{"currentAlbumIndex": 0}"#).status == 200)
        var seen: SSEEvent?
        // (The add's own state.changed, for client default, may arrive first.)
        while let event = try onB.next() {
            if event.name == "state.changed", event.json["client"] as? String == "car" {
                seen = event
                break
            }
        }
        let event = try #require(seen)
        #expect(event.json["index"] as? Int == 0 && event.id == "1")
    }

    @Test func aSettingsChangeOnOneInstanceAppliesOnTheOther() throws {
        let (a, b) = try Self.instances()
        for index in 0..<4 { #expect(try Self.add(a.port, "A\(index)").status == 201) }
        let patched = try Self.request(a.port, "/settings", method: "PATCH", json: #"{"paging": {"defaultLimit": 2}}"#)
        #expect(patched.status == 200)
        #expect(eventually(timeout: .seconds(10), pollingEvery: .milliseconds(50)) {
            let settings = try? Self.request(b.port, "/settings").json()
            return (settings?["paging"] as? [String: Any])?["defaultLimit"] as? Int == 2
        })
        #expect(try Self.titles(try Self.request(b.port, "/albums")).count == 2, "B pages with A's setting")
    }

    @Test func anAddressLockedOutOnOneInstanceIsLockedOutOnTheOther() throws {
        let (a, b) = try Self.instances(token: true)
        let right = ["Authorization": "Bearer \(Self.token)"]
        let limits = try Self.request(a.port, "/settings", method: "PATCH", json: #"{"access": {"attemptLimit": 3}}"#, headers: right)
        #expect(limits.status == 200)
        // The limit reached B too before the failures start (settings are shared).
        #expect(eventually(timeout: .seconds(10), pollingEvery: .milliseconds(50)) {
            let settings = try? Self.request(b.port, "/settings", headers: right).json()
            return (settings?["access"] as? [String: Any])?["attemptLimit"] as? Int == 3
        })
        let wrong = ["Authorization": "Bearer wrong-token-000000000"]
        #expect(try Self.add(a.port, "X", headers: wrong).status == 401)
        #expect(try Self.add(b.port, "X", headers: wrong).status == 401)
        #expect(try Self.add(a.port, "X", headers: wrong).status == 401)  // the third failure, counted across both
        #expect(try Self.add(a.port, "X", headers: right).status == 429, "locked at A, even with the right token")
        #expect(eventually(timeout: .seconds(10), pollingEvery: .milliseconds(50)) {
            (try? Self.add(b.port, "X", headers: right).status) == 429
        }, "and at B")
    }

    @Test func aTokenSetFromTheCommandLineLocksEveryInstance() throws {
        let url = try PostgresServer.shared().makeDatabase()
        let environment = ["BLUELIBRARY_DATABASE_URL": url]
        let arguments = ["--access-log", "off", "--seed", "off"]
        let a = try ServerProcess(arguments: arguments, environment: environment, dataDirectory: TestApp.temporaryDirectory())
        let b = try ServerProcess(arguments: arguments, environment: environment, dataDirectory: TestApp.temporaryDirectory())
        #expect(try Self.add(a.port, "Open").status == 201)
        let run = try ChildProcess.run(
            ServerProcess.executableURL.path, ["token", "set", "--database-url", url],
            environment: ChildProcess.environment(dropping: { $0.hasPrefix("BLUELIBRARY_") }, adding: [:]),
            input: Array((Self.token + "\n").utf8), mergeStderr: true)
        #expect(run.status == 0, "\(String(decoding: run.stdout, as: UTF8.self))")
        for instance in [a, b] {
            #expect(eventually(timeout: .seconds(10), pollingEvery: .milliseconds(50)) {
                (try? Self.add(instance.port, "Closed").status) == 401
            })
            #expect(try Self.add(instance.port, "Mine", headers: ["Authorization": "Bearer \(Self.token)"]).status == 201)
        }
    }
}
