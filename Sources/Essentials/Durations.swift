/// The one place `Duration`'s (seconds, attoseconds) pair is turned into the units C APIs and
/// clocks want. Negative durations count as zero; huge ones saturate instead of trapping.
extension Duration {
    /// Whole nanoseconds, clamped to 0...UInt64.max.
    public var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 || seconds > 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let fraction = UInt64(max(0, attoseconds) / 1_000_000_000)
        let (sum, sumOverflow) = whole.addingReportingOverflow(fraction)
        return sumOverflow ? .max : sum
    }

    /// Whole milliseconds, clamped to 0...Int64.max.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 || seconds > 0 else { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return .max }
        let (sum, sumOverflow) = whole.addingReportingOverflow(max(0, attoseconds) / 1_000_000_000_000_000)
        return sumOverflow ? .max : sum
    }

    /// Seconds as a floating-point number (for Foundation and Dispatch APIs that take one).
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
