import Synchronization

/// What readiness depends on: set by the app as it starts and drains.
final class ServiceState: Sendable {
    private let draining = Atomic<Bool>(false)

    var isDraining: Bool { draining.load(ordering: .relaxed) }
    func beginDraining() { draining.store(true, ordering: .relaxed) }
}
