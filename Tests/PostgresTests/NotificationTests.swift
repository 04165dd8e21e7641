import HTTPTestSupport
import Postgres
import TestThreads
import Testing

@Suite(.ownThreads) struct NotificationTests {
    private func pair() throws -> (listener: PostgresConnection, sender: PostgresConnection) {
        let url = try PostgresServer.shared().makeDatabase()
        return (try PostgresConnection(url: url), try PostgresConnection(url: url))
    }

    @Test func aNotifyReachesTheListener() throws {
        let (listener, sender) = try pair()
        try listener.listen("bluelibrary_commits")
        try sender.run("SELECT pg_notify($1, $2)", [.text("bluelibrary_commits"), .text("jazz")])
        let received = try listener.notifications(waitingUpTo: .seconds(30))
        #expect(received == [PostgresNotification(channel: "bluelibrary_commits", payload: "jazz")])
    }

    @Test func aNotifyFromAnotherThreadWakesAWaitingListener() throws {
        let (listener, sender) = try pair()
        try listener.listen("wake")
        let handover = Handover(listener)
        let thread = TestThread { () -> Int in
            let listener = handover.value
            var received: [PostgresNotification] = []
            while received.isEmpty {
                received = try listener.notifications(waitingUpTo: .seconds(30))
            }
            return received.count
        }
        try sender.execute("NOTIFY wake, 'now'")
        #expect(try thread.join() == 1)
    }

    @Test func notificationsOfATransactionArriveAtCommitOnly() throws {
        let (listener, sender) = try pair()
        try listener.listen("c1")
        try listener.listen("c2")
        #expect(throws: TestFailure(reason: "undo")) {
            try sender.transaction(.readCommitted) {
                try sender.run("SELECT pg_notify('c1', 'rolled back')")
                throw TestFailure(reason: "undo")
            }
        }
        try sender.transaction(.readCommitted) {
            try sender.run("SELECT pg_notify('c1', 'one')")
            try sender.run("SELECT pg_notify('c2', 'two')")
        }
        var received: [PostgresNotification] = []
        #expect(try eventually(timeout: .seconds(30)) {
            received += try listener.notifications(waitingUpTo: .milliseconds(100))
            return received.count >= 2
        })
        #expect(received == [PostgresNotification(channel: "c1", payload: "one"), PostgresNotification(channel: "c2", payload: "two")])
    }

    @Test func nothingToReceiveReturnsEmptyAfterTheWait() throws {
        let (listener, _) = try pair()
        try listener.listen("quiet")
        #expect(try listener.notifications(waitingUpTo: .milliseconds(20)).isEmpty)
        try listener.unlisten("quiet")
    }

    @Test(arguments: ["", "Upper", "has space", "semi;colon", "1starts_with_digit", "quote\"d", String(repeating: "a", count: 64)])
    func aChannelMustBeAPlainIdentifier(channel: String) throws {
        let connection = try makeConnection()
        #expect(postgresError { try connection.listen(channel) }?.kind == .other)
    }

    @Test func aListenerWhoseServerClosesItGetsAConnectionError() throws {
        let (listener, sender) = try pair()
        try listener.listen("gone")
        #expect(try sender.scalar("SELECT pg_terminate_backend($1::integer, 10000)", [.integer(Int64(listener.backendPID))], as: Bool.self) == true)
        let error = postgresError { _ = try listener.notifications(waitingUpTo: .seconds(30)) }
        #expect(error?.kind == .connection)
    }
}
