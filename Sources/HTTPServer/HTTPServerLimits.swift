/// Every resource a client can make the server hold has a limit here. Defaults suit a service
/// behind a reverse proxy; the tests shrink the timeouts.
public struct HTTPServerLimits: Sendable {
    /// Longest request line (method, target, version). Longer: 414. Default 8 KiB.
    public var maxRequestLineBytes = 8 * 1024
    /// Largest request head (request line plus header fields). Larger: 431. Default 32 KiB.
    public var maxHeadBytes = 32 * 1024
    /// Most header fields in one request. More: 431. Default 100.
    public var maxHeaderCount = 100
    /// Largest request body unless a route sets its own. Larger: 413. Default 1 MiB.
    public var maxBodyBytes = 1024 * 1024
    /// Time a client has to send a whole request head once it started one. Default 10 s.
    public var headTimeout: Duration = .seconds(10)
    /// Time a keep-alive connection may sit idle between requests. Default 60 s.
    public var idleTimeout: Duration = .seconds(60)
    /// Time a request body may make no progress. Default 30 s.
    public var bodyTimeout: Duration = .seconds(30)
    /// Slowest request body accepted once `bodyRateGracePeriod` has passed since its first
    /// byte was expected: a slower body gets 408 and the connection is closed, as a slow head
    /// does (a client trickling a byte now and then never trips `bodyTimeout`). 0 turns the
    /// check off. Default 1,024 bytes per second.
    public var minBodyBytesPerSecond = 1024
    /// How long a request body may take before `minBodyBytesPerSecond` applies. Default 10 s.
    public var bodyRateGracePeriod: Duration = .seconds(10)
    /// Time a response may make no progress because the client does not read. Default 30 s.
    public var writeTimeout: Duration = .seconds(30)
    /// Lingering close: after an error response (400, 408, 413, 431, ...) the server stops
    /// writing (`shutdown(SHUT_WR)`) and reads and discards what the client still sends, for
    /// at most this long, before it closes; closing with unread input would send a reset that
    /// can destroy the response before the client reads it. Default 5 s (nginx's
    /// `lingering_timeout`).
    public var lingerTimeout: Duration = .seconds(5)
    /// Most bytes discarded while lingering; past this the connection is closed. Default 4 MiB.
    public var lingerMaxBytes = 4 * 1024 * 1024
    /// Fairness: most requests one connection may start per event-loop wake-up. A pipelining
    /// client with more queued yields the loop and is resumed after the other ready
    /// connections have had their turn. Default 32.
    public var maxRequestsPerWakeup = 32
    /// Most bytes read from one connection per wake-up before it yields the loop. Default 256 KiB.
    public var maxReadBytesPerWakeup = 256 * 1024
    /// When `accept` fails for want of descriptors (EMFILE, ENFILE) or memory, the loop stops
    /// accepting for this long instead of retrying at once: the listener stays readable, so
    /// retrying would spin the CPU. Waiting clients stay in the listen backlog. Default 100 ms.
    public var acceptRetryDelay: Duration = .milliseconds(100)
    /// Open connections at most, across all loops. Excess ones get 503 and are closed. Default 10,000.
    public var maxConnections = 10_000
    /// Response bytes queued for one connection before it stops reading pipelined requests.
    public var maxQueuedResponseBytes = 1024 * 1024
    /// Bytes queued for a streaming response (SSE) before the slow reader is dropped. Default 1 MiB.
    public var maxQueuedStreamBytes = 1024 * 1024
    /// `SO_SNDBUF` of the socket of a stream that bounds its unsent bytes
    /// (``HTTPStreamBody/boundsUnsentBytes``, the event streams): Linux doubles it and stops
    /// autotuning, so a client that stops reading pins at most about twice this in the kernel
    /// (instead of up to `tcp_wmem`'s maximum, 4 MiB). 0 leaves the kernel's default. Default 32 KiB.
    public var streamSendBufferBytes = 32 * 1024
    /// Such a stream is dropped (closed with a reset, which frees the kernel's queue at once)
    /// when its unsent bytes, the server's queue plus the kernel's (`SIOCOUTQ`), pass this.
    /// Default 256 KiB.
    public var maxUnsentStreamBytes = 256 * 1024

    public init() {}
}
