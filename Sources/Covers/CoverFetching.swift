import Library

/// One request to the upstream: the URL and, for a revalidation, the validators kept from the
/// last fetch (sent as `If-None-Match` / `If-Modified-Since`).
///
/// `totalTimeout` and `addressPolicy`, when set, replace the fetcher's configured ones for this
/// fetch (``CoverService/update(cacheSizeLimit:fetchTimeout:freshness:addressPolicy:)`` sets
/// them at runtime); nil keeps the fetcher's configuration.
public struct UpstreamRequest: Sendable, Equatable {
    public var url: CoverURL
    public var etag: String?
    public var lastModified: String?
    public var totalTimeout: Duration?
    public var addressPolicy: CoverAddressPolicy?

    public init(url: CoverURL, etag: String? = nil, lastModified: String? = nil,
                totalTimeout: Duration? = nil, addressPolicy: CoverAddressPolicy? = nil) {
        self.url = url
        self.etag = etag
        self.lastModified = lastModified
        self.totalTimeout = totalTimeout
        self.addressPolicy = addressPolicy
    }
}

/// What the upstream gave.
public enum UpstreamResponse: Sendable, Equatable {
    /// A 200 whose bytes are a recognised image.
    case image(bytes: [UInt8], format: ImageSignature, etag: String?, lastModified: String?)
    /// A 304 to a conditional request: the kept copy is still good.
    case notModified(etag: String?, lastModified: String?)
}

/// Fetches cover bytes from upstream. Blocking; called on the service's fetch threads.
/// ``CurlCoverFetcher`` is the real one; tests of the cache logic may use a fake.
public protocol CoverFetching: Sendable {
    func fetch(_ request: UpstreamRequest) -> Result<UpstreamResponse, CoverError>
}
