import HTTPServer

/// `ForwardedHeaders` for the fuzz target in `Fuzz/`. Not API: reached only with
/// `@_spi(Fuzzing) import BlueLibraryServer`.
@_spi(Fuzzing) public enum ForwardedHeadersFuzzingSeam {
    /// What the `family` headers in `headers` say: the chain (client first), scheme and host.
    public static func parse(
        _ headers: HTTPHeaders, family: ForwardedHeaderFamily
    ) -> (chain: [String], proto: String?, host: String?) {
        let forwarded = ForwardedHeaders(headers, family: family)
        return (forwarded.chain, forwarded.proto, forwarded.host)
    }
}
