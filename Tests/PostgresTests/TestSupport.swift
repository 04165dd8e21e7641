import HTTPTestSupport
import Postgres

/// A connection to a fresh, empty database of the test process's shared cluster.
func makeConnection() throws -> PostgresConnection {
    try PostgresConnection(url: try PostgresServer.shared().makeDatabase())
}

struct TestFailure: Error, Equatable {
    let reason: String
}
