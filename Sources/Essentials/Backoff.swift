/// The pause before trying a lost dependency again (a database connection): `first` after one
/// failure, doubling with each further failure, never more than `longest`. One definition for
/// every reconnect (the connection pool's, the commit listener's).
public struct Backoff: Sendable, Hashable {
    public var first: Duration
    public var longest: Duration

    public init(first: Duration = .milliseconds(100), longest: Duration = .seconds(2)) {
        self.first = first
        self.longest = longest
    }

    /// The pause after `failures` failures in a row (none: no pause).
    public func delay(afterFailures failures: Int) -> Duration {
        guard failures > 0 else { return .zero }
        let doublings = min(failures - 1, 30)
        return min(first * (1 << doublings), longest)
    }
}
