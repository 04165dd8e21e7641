import CPostgres
#if canImport(Glibc)
import Glibc
#endif

/// A notification sent with `NOTIFY channel, 'payload'` (or `pg_notify`) to a channel this
/// connection listens on.
public struct PostgresNotification: Sendable, Hashable {
    public var channel: String
    public var payload: String

    public init(channel: String, payload: String) {
        self.channel = channel
        self.payload = payload
    }
}

extension PostgresConnection {
    /// Starts listening on `channel`: a lowercase identifier of our own (`[a-z_][a-z0-9_]*`,
    /// at most 63 characters), never user input; anything else throws.
    public func listen(_ channel: String) throws {
        try execute("LISTEN \(try Self.quotedChannel(channel))")
    }

    /// Stops listening on `channel`.
    public func unlisten(_ channel: String) throws {
        try execute("UNLISTEN \(try Self.quotedChannel(channel))")
    }

    /// The notifications that arrived for the channels this connection listens on; when none
    /// has arrived yet, waits up to `timeout` (with `poll()` on the connection's socket) for
    /// the first ones. Empty when none came in time. Throws a `.connection` error when the
    /// connection is lost meanwhile.
    ///
    /// Notifications arrive only between transactions, and are also collected while other
    /// statements run on this connection.
    public func notifications(waitingUpTo timeout: Duration) throws -> [PostgresNotification] {
        try requireIdle("LISTEN")
        guard PQconsumeInput(handle) == 1 else { throw PostgresError(connection: handle, sql: nil) }
        var received = takeNotifications()
        let deadline = ContinuousClock.now + timeout
        while received.isEmpty {
            guard try waitForSocket(PQsocket(handle), events: Int16(POLLIN), until: deadline) else { break }
            guard PQconsumeInput(handle) == 1 else { throw PostgresError(connection: handle, sql: nil) }
            received = takeNotifications()
        }
        return received
    }

    private func takeNotifications() -> [PostgresNotification] {
        var received: [PostgresNotification] = []
        while let notify = PQnotifies(handle) {
            defer { PQfreemem(notify) }
            received.append(PostgresNotification(
                channel: String(cString: notify.pointee.relname),
                payload: String(cString: notify.pointee.extra)
            ))
        }
        return received
    }

    private static func quotedChannel(_ channel: String) throws -> String {
        let bytes = Array(channel.utf8)
        let valid = !bytes.isEmpty && bytes.count <= 63 && bytes.enumerated().allSatisfy { position, byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || byte == UInt8(ascii: "_")
                || (position > 0 && byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
        }
        guard valid else {
            throw PostgresError(kind: .other, message: "invalid channel name \"\(channel)\" (expected [a-z_][a-z0-9_]*)")
        }
        return "\"\(channel)\""
    }
}
