@_spi(Fuzzing) extension CursorSeal {
    /// The tag `decode` expects after `payload`, so the page-cursor fuzz target in `Fuzz/` can
    /// seal any payload with its own key. Not API: reached only with `@_spi(Fuzzing) import Library`.
    public func fuzzingTag(_ payload: [UInt8]) -> [UInt8] {
        tag(payload)
    }
}
