/// Limits of one upstream cover fetch. Every default is what the server uses unless
/// configured otherwise.
public struct CoverFetcherConfiguration: Sendable {
    /// Time to establish a connection (name resolution, TCP, TLS). Default 10 s.
    public var connectTimeout: Duration
    /// The whole fetch, every redirect hop included. Default 30 s.
    public var totalTimeout: Duration
    /// Redirects followed at most; a loop is refused at once. Default 5.
    public var maxRedirects: Int
    /// The largest body accepted. Larger is aborted (by `Content-Length`, or as soon as the
    /// running total passes it), never truncated and cached. Default 10 MiB.
    public var maxBodyBytes: Int
    /// Sent with every request.
    public var userAgent: String
    /// Which resolved addresses may be connected to (the SSRF guard).
    public var addressPolicy: CoverAddressPolicy

    public static let defaultUserAgent = "BlueLibrary/0.1 (+cover fetcher)"

    public init(
        connectTimeout: Duration = .seconds(10), totalTimeout: Duration = .seconds(30), maxRedirects: Int = 5,
        maxBodyBytes: Int = 10 * 1024 * 1024, userAgent: String = CoverFetcherConfiguration.defaultUserAgent,
        addressPolicy: CoverAddressPolicy = CoverAddressPolicy()
    ) {
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.maxRedirects = maxRedirects
        self.maxBodyBytes = maxBodyBytes
        self.userAgent = userAgent
        self.addressPolicy = addressPolicy
    }
}
