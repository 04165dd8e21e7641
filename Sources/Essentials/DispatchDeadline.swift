import Dispatch

extension DispatchTime {
    /// The deadline `duration` from now, for `DispatchSemaphore.wait(timeout:)` and the like.
    /// A negative duration is now; one too long for the clock is `.distantFuture` (never a trap).
    public static func now(plus duration: Duration) -> DispatchTime {
        let nanoseconds = duration.nanoseconds
        guard nanoseconds < UInt64(Int64.max) else { return .distantFuture }
        return .now() + .nanoseconds(Int(nanoseconds))
    }
}
