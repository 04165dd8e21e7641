/// What an ``EventHub``'s fan-out has done (served by `/metrics`): the rounds, the events and
/// subscriber writes they made, and the CPU time the event loops spent writing. Coalescing
/// shows as `writes` below `deliveries`: one write carried several events.
public struct FanOutStatistics: Sendable, Equatable {
    /// Rounds that carried at least one event.
    public var batches = 0
    /// Events the rounds carried (each once, however many subscribers got it).
    public var events = 0
    /// Events times the subscribers they were written to.
    public var deliveries = 0
    /// Stream writes: one per subscriber per round.
    public var writes = 0
    /// CPU time of the event loops queueing and sending the rounds' payloads.
    public var cpu: Duration = .zero

    public init(batches: Int = 0, events: Int = 0, deliveries: Int = 0, writes: Int = 0, cpu: Duration = .zero) {
        self.batches = batches
        self.events = events
        self.deliveries = deliveries
        self.writes = writes
        self.cpu = cpu
    }

    public static func += (total: inout FanOutStatistics, round: FanOutStatistics) {
        total.batches += round.batches
        total.events += round.events
        total.deliveries += round.deliveries
        total.writes += round.writes
        total.cpu += round.cpu
    }
}
