import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryClient

/// The client sends back the newest `BlueLibrary-Position` it was handed, so on a server that
/// reads from a replica it reads its own writes, even from a replica seconds behind.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct ReadPositionClientTests {
    @Test func theClientReadsItsOwnWritesFromAServerWithAReplicaBehind() throws {
        let pair = try StreamingReplicaPair()
        let directory = try TemporaryDirectory(prefix: "bluelibrary-client-position")
        // The replica may serve while up to a minute behind: only the position keeps it off.
        let server = try pair.instance(directory, environment: ["BLUELIBRARY_REPLICA_MAX_LAG": "60"])
        let client = LiveServer.client(port: server.port)
        _ = try client.list()
        #expect(client.position.text != nil, "a read hands out a position")
        #expect(eventually(timeout: .seconds(10)) {
            (try? RawHTTPClient.request(port: server.port, path: "/readyz").text.contains(#""serving":true"#)) ?? false
        })
        try pair.delayReplay(by: .seconds(5))
        for round in 0..<5 {
            let added = try client.add(AlbumInput(title: "Mine \(round)", artist: "Client"))
            var query = AlbumPageQuery()
            query.q = "Mine"
            let page = try client.list(query)
            #expect(page.items.contains { $0.id == added.id }, "round \(round): the client did not read its own write")
        }
        // A client without the position (a fresh one) is served by the replica, 5 s behind.
        var query = AlbumPageQuery()
        query.q = "Mine"
        let fresh = try LiveServer.client(port: server.port).list(query)
        #expect(fresh.items.isEmpty, "the delayed replica showed writes already: \(fresh.items.map(\.title))")
    }

    @Test func positionsOnlyMoveForward() {
        let memo = ReadPositionMemo()
        #expect(memo.text == nil)
        memo.note("0/16B3748")
        memo.note("0/16B3700")
        memo.note("not a position")
        #expect(memo.text == "0/16B3748")
        memo.note("1/0")
        #expect(memo.text == "1/0")
    }
}
