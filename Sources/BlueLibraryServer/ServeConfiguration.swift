import Foundation
import Covers
import Essentials
import HTTPServer
import Library

/// Everything `bluelibrary serve` can be told, from flags and `BLUELIBRARY_*` variables
/// (flags win). Parsing is pure so that tests drive it without a process.
public struct ServeConfiguration: Sendable, Equatable {
    /// Loopback by default: nothing on the network reaches a server that was not told to
    /// listen there (the container image sets `BLUELIBRARY_HOST=0.0.0.0`).
    public var host = "127.0.0.1"
    public var port = 8080
    public var dataDirectory = "./data"
    /// `BLUELIBRARY_DATABASE_URL`: a PostgreSQL database (`postgres://user:password@host/db`)
    /// shared by every instance started with it; nil: the SQLite file in `dataDirectory`.
    public var databaseURL: String?
    /// `BLUELIBRARY_DATABASE_PASSWORD_FILE`: the PostgreSQL password, read from that file and
    /// given to libpq on its own (so it needs no percent-encoding and the URL holds none).
    public var databasePassword: String?
    /// `BLUELIBRARY_DATABASE_POOL_SIZE`: PostgreSQL connections this instance opens at most.
    public var databasePoolSize = 10
    /// `BLUELIBRARY_DATABASE_READ_URL`: streaming replicas of the database (URLs separated by
    /// spaces) that reads of GET and HEAD requests may use; empty: every read on the primary.
    public var databaseReadURLs: [String] = []
    /// `BLUELIBRARY_REPLICA_MAX_LAG`: a replica further behind the primary serves no read.
    public var replicaMaxLag: Duration = .seconds(1)
    /// `BLUELIBRARY_REPLICA_WAIT`: how long a read waits for a replica to replay its client's
    /// position before it reads the primary.
    public var replicaWait: Duration = .milliseconds(100)
    public var logLevel: HTTPServer.LogLevel = .info
    public var accessLog = true
    public var trustedProxies: [IPAddressRange] = []
    /// The one header family a trusted proxy's word is taken from.
    public var forwardedHeaders: ForwardedHeaderFamily = .xForwarded
    public var eventLoops: Int?
    public var workers = 16
    /// `BLUELIBRARY_WORKER_QUEUE`: blocking work (writes, covers, other reads) that may wait for
    /// one of the `workers`; more gets 503 `server-busy` at once.
    public var workerQueue = 1024
    /// `BLUELIBRARY_READ_WORKERS`: threads of the read lane, where uncached list reads run
    /// (`GET /albums`, `GET /views/{view}/albums` and the `at/{index}` reads when their page
    /// is not in memory); nil: see ``defaultReadWorkers``.
    public var readWorkers: Int?
    /// `BLUELIBRARY_READ_QUEUE`: uncached list reads that may wait for a read-lane thread;
    /// more get 503 `server-busy` at once.
    public var readQueue = 256
    /// `BLUELIBRARY_MAX_READS_PER_CLIENT`: uncached list reads one client address may have
    /// running or waiting at once (the address a trusted proxy gives); more get 503
    /// `too-many-reads`. 0: no limit.
    public var maxReadsPerClient = 4
    /// `BLUELIBRARY_READ_NICE`: the nice value of the read lane's threads (0-19; 0: the
    /// process's own), so that on a saturated CPU event loops, workers, writes and cheap reads
    /// win over expensive reads.
    public var readNice = 10
    /// How long a SQLite read waits for a free reader connection before 503
    /// `database-unavailable` (tests shrink it).
    public var readerWait: Duration = .seconds(10)
    public var shutdownGrace: Duration = .seconds(10)
    public var seed = true
    public var limits = HTTPServerLimits()
    /// Hosts and CIDRs cover URLs may point at although they are internal (comma-separated).
    public var coverAllow = ""
    /// `BLUELIBRARY_COVER_ALLOW_FROM_SETTINGS`: whether `covers.allowList` may open more than
    /// `coverAllow` (off: the setting may only narrow it).
    public var coverAllowFromSettings = false
    /// The cover disk cache's size limit.
    public var coverCacheBytes = 512 * 1024 * 1024
    /// How long a request waits for an uncached cover before 504.
    public var coverWait: Duration = .seconds(10)
    /// `BLUELIBRARY_COVER_MAX_PIXELS`: sized variants (`?size=`) refuse an original declaring more
    /// pixels (width x height, read from its header before decoding). It bounds decoding memory:
    /// up to 8 bytes a pixel (an interlaced 16-bit RGBA PNG is decoded whole) on each of the two
    /// variant threads, so 2 x N x 8 bytes (400 MB at the default). At most 100,000,000.
    public var coverMaxPixels = 25_000_000
    /// The largest archive `PUT /archive` accepts.
    public var maxArchiveBytes = 1 << 30
    /// Bytes kept aside next to the database and given back when the disk is full (0: none).
    public var diskReserveBytes = 32 << 20
    /// `BLUELIBRARY_DURABILITY` (SQLite): `normal` (WAL + `synchronous=NORMAL`: an acknowledged
    /// write survives the process being killed; a power cut may lose the last ones) or `full`
    /// (every commit is synced to disk before the writes it holds are acknowledged).
    public var durability = Durability.normal
    /// `BLUELIBRARY_WRITE_BATCH` (SQLite): most writes committed together in one transaction
    /// when they queue up behind the writer (group commit); 1 commits each alone.
    public var writeBatch = 64
    /// `BLUELIBRARY_QUERY_TIMEOUT`: the longest a read request's database work may take (from
    /// the start of its first query); past it the read is stopped and answers 503
    /// `query-too-expensive`. nil (`off`): no limit. Writes, imports and exports are never cut.
    public var queryTimeout: Duration? = .seconds(2)

    /// How far an acknowledged write survives (see `durability`).
    public enum Durability: String, Sendable, Equatable {
        case normal
        case full
    }
    /// `GET /archive`: the slowest client an export serves and how long it waits for its turn.
    public var exports = ExportPolicy()
    /// `GET /events`: the replay buffer for `Last-Event-ID` and the heartbeat interval.
    public var events = EventHub.Configuration()
    /// `BLUELIBRARY_EVENT_THREADS`: the threads every library's event hub shares (fan-out
    /// rounds and heartbeats); the event delivery never uses more.
    public var eventThreads = EventHubs.defaultThreads
    /// `BLUELIBRARY_EVENT_HUB_IDLE`: a library's hub without subscribers for this long is
    /// removed (its replay buffer freed; `default`'s stays).
    public var eventHubIdle = EventHubs.defaultIdleTimeout
    /// The clock hub idleness is measured with (tests inject a manual one).
    public var eventHubClock: any MonotonicClock = SystemClock()
    /// How long `GET /changes` keeps changes (tests shrink it).
    public var changeRetention = ChangeRetention.default
    /// `BLUELIBRARY_CORS_ORIGINS`: browser origins (`https://app.example.com`) allowed to call
    /// the API from a page of theirs; empty: no CORS headers at all (the default).
    public var corsOrigins: [String] = []
    /// `BLUELIBRARY_TOKEN`: at start, its hash replaces the stored one and the lock is enabled.
    public var token: AccessToken?
    /// What start-up should warn about (a secret file others may read), logged by `serve`.
    public var warnings: [String] = []
    /// How often the server looks whether the database was changed by another process (a
    /// token set from the command line); the settings and the token hash are then re-read.
    public var accessPollInterval: Duration = .seconds(1)
    /// The clock of the lockout (tests inject a manual one).
    public var accessClock: @Sendable () -> Date = { Date() }

    public init() {}

    /// The read lane's threads: `readWorkers`, or by default as many as the database can serve
    /// reads for while a connection stays free for everything else: SQLite's reader
    /// connections less one (3; writes use the writer, and one reader is left for the point
    /// reads and token checks of other requests), PostgreSQL's half of `databasePoolSize` (the
    /// other half for writes).
    public var defaultReadWorkers: Int {
        if let readWorkers { return readWorkers }
        if databaseURL != nil { return max(1, databasePoolSize / 2) }
        return max(1, sqliteStorage.readerCount - 1)
    }

    public static func == (a: ServeConfiguration, b: ServeConfiguration) -> Bool {
        a.host == b.host && a.port == b.port && a.dataDirectory == b.dataDirectory && a.logLevel == b.logLevel
            && a.databaseURL == b.databaseURL && a.databasePassword == b.databasePassword && a.databasePoolSize == b.databasePoolSize
            && a.databaseReadURLs == b.databaseReadURLs && a.replicaMaxLag == b.replicaMaxLag && a.replicaWait == b.replicaWait
            && a.accessLog == b.accessLog && a.trustedProxies == b.trustedProxies
            && a.forwardedHeaders == b.forwardedHeaders && a.eventLoops == b.eventLoops
            && a.workers == b.workers && a.shutdownGrace == b.shutdownGrace && a.seed == b.seed
            && a.workerQueue == b.workerQueue && a.readWorkers == b.readWorkers && a.readQueue == b.readQueue
            && a.maxReadsPerClient == b.maxReadsPerClient && a.readNice == b.readNice && a.readerWait == b.readerWait
            && a.corsOrigins == b.corsOrigins && a.durability == b.durability && a.writeBatch == b.writeBatch
            && a.queryTimeout == b.queryTimeout
            && a.eventThreads == b.eventThreads && a.eventHubIdle == b.eventHubIdle
            && a.limits.streamSendBufferBytes == b.limits.streamSendBufferBytes
            && a.limits.maxUnsentStreamBytes == b.limits.maxUnsentStreamBytes
    }

    /// One option: its flag, its variable, what it means, and how to apply a value.
    struct Option: Sendable {
        let flag: String
        let variable: String
        let placeholder: String?
        let defaultText: String
        let help: String
        let apply: @Sendable (inout ServeConfiguration, String) throws(ConfigurationError) -> Void
    }

    static let options: [Option] = [
        Option(flag: "--host", variable: "BLUELIBRARY_HOST", placeholder: "ADDRESS", defaultText: "127.0.0.1",
               help: "IP address to listen on (IPv4 or IPv6); 0.0.0.0 or :: for every interface.") { config, value throws(ConfigurationError) in
            guard isIPAddress(value) else { throw ConfigurationError("host must be an IP address like 0.0.0.0 or ::, not '\(value)'") }
            config.host = value
        },
        Option(flag: "--port", variable: "BLUELIBRARY_PORT", placeholder: "PORT", defaultText: "8080",
               help: "TCP port; 0 picks a free one.") { config, value throws(ConfigurationError) in
            config.port = try integer(value, in: 0...65535, name: "port")
        },
        Option(flag: "--data-dir", variable: "BLUELIBRARY_DATA_DIR", placeholder: "DIR", defaultText: "./data",
               help: "Directory for the SQLite database and the cover cache.") { config, value throws(ConfigurationError) in
            guard !value.isEmpty else { throw ConfigurationError("data directory must not be empty") }
            config.dataDirectory = value
        },
        Option(flag: "--database-url", variable: "BLUELIBRARY_DATABASE_URL", placeholder: "URL", defaultText: "none (SQLite)",
               help: "PostgreSQL database (postgres://user:pass@host:5432/db) shared by several instances; none: SQLite in the data directory.") {
            config, value throws(ConfigurationError) in
            config.databaseURL = try databaseURL(value)
        },
        Option(flag: "--database-pool-size", variable: "BLUELIBRARY_DATABASE_POOL_SIZE", placeholder: "N", defaultText: "10",
               help: "PostgreSQL connections this instance opens at most; a request finding none free within 2 s gets 503.") {
            config, value throws(ConfigurationError) in
            config.databasePoolSize = try integer(value, in: 1...1000, name: "database pool size")
        },
        Option(flag: "--database-read-url", variable: "BLUELIBRARY_DATABASE_READ_URL", placeholder: "URL[ URL...]", defaultText: "none",
               help: "PostgreSQL streaming replicas (URLs separated by spaces) that reads may use; a client never reads older than what it wrote or saw.") {
            config, value throws(ConfigurationError) in
            var urls: [String] = []
            for word in value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }) {
                if let url = try databaseURL(String(word)) { urls.append(url) }
            }
            config.databaseReadURLs = urls
        },
        Option(flag: "--replica-max-lag", variable: "BLUELIBRARY_REPLICA_MAX_LAG", placeholder: "SECONDS", defaultText: "1",
               help: "A replica further behind the primary than this serves no read.") { config, value throws(ConfigurationError) in
            config.replicaMaxLag = try seconds(value, name: "replica max lag")
        },
        Option(flag: "--replica-wait", variable: "BLUELIBRARY_REPLICA_WAIT", placeholder: "SECONDS", defaultText: "0.1",
               help: "Longest a read waits for a replica to reach what its client saw before it reads the primary.") {
            config, value throws(ConfigurationError) in
            config.replicaWait = try seconds(value, name: "replica wait")
        },
        Option(flag: "--log-level", variable: "BLUELIBRARY_LOG_LEVEL", placeholder: "LEVEL", defaultText: "info",
               help: "debug, info, warning or error.") { config, value throws(ConfigurationError) in
            switch value.lowercased() {
            case "debug": config.logLevel = .debug
            case "info": config.logLevel = .info
            case "warning", "warn": config.logLevel = .warning
            case "error": config.logLevel = .error
            default: throw ConfigurationError("log level must be debug, info, warning or error, not '\(value)'")
            }
        },
        Option(flag: "--access-log", variable: "BLUELIBRARY_ACCESS_LOG", placeholder: "on|off", defaultText: "on",
               help: "One JSON line per request on stdout.") { config, value throws(ConfigurationError) in
            config.accessLog = try boolean(value, name: "access log")
        },
        Option(flag: "--trusted-proxies", variable: "BLUELIBRARY_TRUSTED_PROXIES", placeholder: "CIDR,...", defaultText: "none",
               help: "Proxies whose forwarded headers (see --forwarded-headers) are believed.") { config, value throws(ConfigurationError) in
            config.trustedProxies = try value.split(separator: ",").map { item throws(ConfigurationError) in
                let text = item.trimmingASCIIWhitespace()
                guard let range = IPAddressRange(text) else {
                    throw ConfigurationError("trusted proxy '\(text)' is not an address or CIDR like 10.0.0.0/8")
                }
                return range
            }
        },
        Option(flag: "--forwarded-headers", variable: "BLUELIBRARY_FORWARDED_HEADERS", placeholder: "x-forwarded|forwarded",
               defaultText: "x-forwarded",
               help: "The one header family a trusted proxy's client address is read from (the other is ignored).") { config, value throws(ConfigurationError) in
            guard let family = ForwardedHeaderFamily(rawValue: value.trimmingASCIIWhitespace().lowercased()) else {
                throw ConfigurationError("forwarded headers must be x-forwarded or forwarded, not '\(value)'")
            }
            config.forwardedHeaders = family
        },
        Option(flag: "--event-loops", variable: "BLUELIBRARY_EVENT_LOOPS", placeholder: "N", defaultText: "CPUs",
               help: "Event loop threads.") { config, value throws(ConfigurationError) in
            config.eventLoops = try integer(value, in: 1...256, name: "event loops")
        },
        Option(flag: "--event-threads", variable: "BLUELIBRARY_EVENT_THREADS", placeholder: "N", defaultText: "2",
               help: "Threads shared by every library's event stream (fan-out and heartbeats); event delivery never uses more, however many libraries are subscribed to.") {
            config, value throws(ConfigurationError) in
            config.eventThreads = try integer(value, in: 1...64, name: "event threads")
        },
        Option(flag: "--event-hub-idle", variable: "BLUELIBRARY_EVENT_HUB_IDLE", placeholder: "SECONDS", defaultText: "60",
               help: "A library's event hub with no subscriber for this long (looked at every half of it) is removed with its replay buffer; a later Last-Event-ID is filled from the change feed.") {
            config, value throws(ConfigurationError) in
            config.eventHubIdle = try seconds(value, name: "event hub idle")
        },
        Option(flag: "--event-send-buffer", variable: "BLUELIBRARY_EVENT_SEND_BUFFER", placeholder: "BYTES", defaultText: "32768",
               help: "SO_SNDBUF of each event stream's socket (Linux doubles it for its bookkeeping): the kernel memory one subscriber that stops reading can hold; 0 leaves the kernel's autotuning.") {
            config, value throws(ConfigurationError) in
            config.limits.streamSendBufferBytes = try integer(value, in: 0...(64 << 20), name: "event send buffer")
        },
        Option(flag: "--event-max-unsent", variable: "BLUELIBRARY_EVENT_MAX_UNSENT", placeholder: "BYTES", defaultText: "262144",
               help: "An event stream whose unsent bytes (the server's queue plus the kernel's send queue) pass this is dropped; the client resumes with Last-Event-ID.") {
            config, value throws(ConfigurationError) in
            config.limits.maxUnsentStreamBytes = try integer(value, in: 4096...(1 << 30), name: "event max unsent")
        },
        Option(flag: "--workers", variable: "BLUELIBRARY_WORKERS", placeholder: "N", defaultText: "16",
               help: "Worker threads for blocking work (database writes, covers).") { config, value throws(ConfigurationError) in
            config.workers = try integer(value, in: 1...1024, name: "workers")
        },
        Option(flag: "--worker-queue", variable: "BLUELIBRARY_WORKER_QUEUE", placeholder: "N", defaultText: "1024",
               help: "Blocking work that may wait for a worker; more gets 503 server-busy with Retry-After.") { config, value throws(ConfigurationError) in
            config.workerQueue = try integer(value, in: 1...1_000_000, name: "worker queue")
        },
        Option(flag: "--read-workers", variable: "BLUELIBRARY_READ_WORKERS", placeholder: "N",
               defaultText: "SQLite 3 (its 4 readers less one), PostgreSQL half the pool",
               help: "Threads for uncached list reads (GET /albums, /views/{view}/albums, .../at/{index}), apart from the workers, so writes and health checks never wait behind them.") {
            config, value throws(ConfigurationError) in
            config.readWorkers = try integer(value, in: 1...256, name: "read workers")
        },
        Option(flag: "--read-queue", variable: "BLUELIBRARY_READ_QUEUE", placeholder: "N", defaultText: "256",
               help: "Uncached list reads that may wait for a read thread; more get 503 server-busy with Retry-After.") { config, value throws(ConfigurationError) in
            config.readQueue = try integer(value, in: 0...100_000, name: "read queue")
        },
        Option(flag: "--max-reads-per-client", variable: "BLUELIBRARY_MAX_READS_PER_CLIENT", placeholder: "N", defaultText: "4",
               help: "Uncached list reads one client address may have running or waiting (behind a proxy: the address from --trusted-proxies); more get 503 too-many-reads with Retry-After. 0: no limit.") {
            config, value throws(ConfigurationError) in
            config.maxReadsPerClient = try integer(value, in: 0...100_000, name: "max reads per client")
        },
        Option(flag: "--read-nice", variable: "BLUELIBRARY_READ_NICE", placeholder: "N", defaultText: "10",
               help: "Nice value (0-19) of the read lane's threads, so that on a busy CPU writes, cheap reads and the event loops come first. 0: the process's own.") {
            config, value throws(ConfigurationError) in
            config.readNice = try integer(value, in: 0...19, name: "read nice")
        },
        Option(flag: "--shutdown-grace", variable: "BLUELIBRARY_SHUTDOWN_GRACE", placeholder: "SECONDS", defaultText: "10",
               help: "How long SIGTERM waits for in-flight requests.") { config, value throws(ConfigurationError) in
            config.shutdownGrace = .seconds(try integer(value, in: 0...3600, name: "shutdown grace"))
        },
        Option(flag: "--seed", variable: "BLUELIBRARY_SEED", placeholder: "on|off", defaultText: "on",
               help: "Seed a new database with the tutorial's five albums.") { config, value throws(ConfigurationError) in
            config.seed = try boolean(value, name: "seed")
        },
        Option(flag: "--max-body-bytes", variable: "BLUELIBRARY_MAX_BODY_BYTES", placeholder: "BYTES", defaultText: "1048576",
               help: "Largest request body for ordinary routes.") { config, value throws(ConfigurationError) in
            config.limits.maxBodyBytes = try integer(value, in: 1...(1 << 30), name: "max body bytes")
        },
        Option(flag: "--max-archive-bytes", variable: "BLUELIBRARY_MAX_ARCHIVE_BYTES", placeholder: "BYTES", defaultText: "1073741824",
               help: "Largest archive PUT /archive accepts.") { config, value throws(ConfigurationError) in
            config.maxArchiveBytes = try integer(value, in: 1...(1 << 40), name: "max archive bytes")
        },
        Option(flag: "--disk-reserve-bytes", variable: "BLUELIBRARY_DISK_RESERVE_BYTES", placeholder: "BYTES", defaultText: "33554432",
               help: "Space kept aside beside the database (at most 1/16 of the volume), freed when the disk fills so the WAL can be folded back; 0 for none.") { config, value throws(ConfigurationError) in
            config.diskReserveBytes = try integer(value, in: 0...(1 << 34), name: "disk reserve bytes")
        },
        Option(flag: "--durability", variable: "BLUELIBRARY_DURABILITY", placeholder: "normal|full", defaultText: "normal",
               help: "SQLite: full syncs every commit to disk before acknowledging its writes (survives a power cut); normal survives a killed process.") { config, value throws(ConfigurationError) in
            guard let durability = Durability(rawValue: value.trimmingASCIIWhitespace().lowercased()) else {
                throw ConfigurationError("durability must be normal or full, not '\(value)'")
            }
            config.durability = durability
        },
        Option(flag: "--write-batch", variable: "BLUELIBRARY_WRITE_BATCH", placeholder: "N", defaultText: "64",
               help: "SQLite: most queued writes committed together in one transaction (group commit); 1 commits each alone.") { config, value throws(ConfigurationError) in
            config.writeBatch = try integer(value, in: 1...4096, name: "write batch")
        },
        Option(flag: "--query-timeout", variable: "BLUELIBRARY_QUERY_TIMEOUT", placeholder: "SECONDS|off", defaultText: "2",
               help: "Longest a read's database work may take (0.05 is 50 ms); past it the read answers 503 query-too-expensive. Writes, imports (PUT /archive) and exports (GET /archive) have no such limit; off: none.") {
            config, value throws(ConfigurationError) in
            let text = value.trimmingASCIIWhitespace().lowercased()
            config.queryTimeout = text == "off" ? nil : try seconds(text, name: "query timeout")
        },
        Option(flag: "--export-wait", variable: "BLUELIBRARY_EXPORT_WAIT", placeholder: "SECONDS", defaultText: "10",
               help: "Longest an export (GET /archive) waits for one of the two export slots before 503 exports-busy with Retry-After.") {
            config, value throws(ConfigurationError) in
            config.exports.queueDeadline = try seconds(value, name: "export wait")
        },
        Option(flag: "--cover-allow", variable: "BLUELIBRARY_COVER_ALLOW", placeholder: "HOSTS,CIDRS", defaultText: "none",
               help: "Internal hosts/ranges cover URLs may reach (loopback, private, link-local are refused otherwise).") { config, value throws(ConfigurationError) in
            do throws(CoverAddressPolicy.InvalidEntry) {
                _ = try CoverAddressPolicy(allowList: value)
            } catch {
                throw ConfigurationError("cover allow-list: \(error.description)")
            }
            config.coverAllow = value
        },
        Option(flag: "--cover-allow-from-settings", variable: "BLUELIBRARY_COVER_ALLOW_FROM_SETTINGS", placeholder: "on|off", defaultText: "off",
               help: "Let the covers.allowList setting open internal addresses (off: it may only narrow --cover-allow).") { config, value throws(ConfigurationError) in
            config.coverAllowFromSettings = try boolean(value, name: "cover allow from settings")
        },
        Option(flag: "--cover-cache-bytes", variable: "BLUELIBRARY_COVER_CACHE_BYTES", placeholder: "BYTES", defaultText: "536870912",
               help: "Size limit of the cover disk cache (least recently used covers go first).") { config, value throws(ConfigurationError) in
            config.coverCacheBytes = try integer(value, in: 1_048_576...(1 << 42), name: "cover cache bytes")
        },
        Option(flag: "--cover-max-pixels", variable: "BLUELIBRARY_COVER_MAX_PIXELS", placeholder: "N", defaultText: "25000000",
               help: "Sized covers (?size=) refuse originals declaring more pixels (decompression bombs). Decoding may take up to 2 x N x 8 bytes (two variant threads, 8 bytes a pixel for a 16-bit interlaced PNG): 400 MB at the default; at most 100000000.") { config, value throws(ConfigurationError) in
            config.coverMaxPixels = try integer(value, in: 1_000_000...100_000_000, name: "cover max pixels")
        },
        Option(flag: "--cover-wait", variable: "BLUELIBRARY_COVER_WAIT", placeholder: "SECONDS", defaultText: "10",
               help: "How long a request waits for an uncached cover before 504.") { config, value throws(ConfigurationError) in
            config.coverWait = try seconds(value, name: "cover wait")
        },
        Option(flag: "--cors-origins", variable: "BLUELIBRARY_CORS_ORIGINS", placeholder: "ORIGIN,...", defaultText: "none (CORS off)",
               help: "Browser origins (scheme://host[:port], exact) whose pages may call the API; none: no CORS headers.") {
            config, value throws(ConfigurationError) in
            config.corsOrigins = try CORSMiddleware.origins(value)
        },
        Option(flag: "--max-connections", variable: "BLUELIBRARY_MAX_CONNECTIONS", placeholder: "N", defaultText: "10000",
               help: "Open connections at most; more get 503.") { config, value throws(ConfigurationError) in
            config.limits.maxConnections = try integer(value, in: 1...1_000_000, name: "max connections")
        },
        Option(flag: "--min-body-rate", variable: "BLUELIBRARY_MIN_BODY_RATE", placeholder: "BYTES", defaultText: "1024",
               help: "Slowest request body (bytes/s, after 10 s) before 408; 0 is off.") { config, value throws(ConfigurationError) in
            config.limits.minBodyBytesPerSecond = try integer(value, in: 0...(1 << 30), name: "min body rate")
        },
        Option(flag: "--head-timeout", variable: "BLUELIBRARY_HEAD_TIMEOUT", placeholder: "SECONDS", defaultText: "10",
               help: "Time a client has to send a request head.") { config, value throws(ConfigurationError) in
            config.limits.headTimeout = try seconds(value, name: "head timeout")
        },
        Option(flag: "--idle-timeout", variable: "BLUELIBRARY_IDLE_TIMEOUT", placeholder: "SECONDS", defaultText: "60",
               help: "Time a keep-alive connection may stay idle.") { config, value throws(ConfigurationError) in
            config.limits.idleTimeout = try seconds(value, name: "idle timeout")
        },
    ]

    /// A `--database-url` / `BLUELIBRARY_DATABASE_URL` value: nil when empty (SQLite), else a
    /// `postgres://` or `postgresql://` URL (`bluelibrary token set` reads it the same way).
    /// The error never repeats the value: it may hold a password.
    public static func databaseURL(_ value: String) throws(ConfigurationError) -> String? {
        let text = value.trimmingASCIIWhitespace()
        guard !text.isEmpty else { return nil }
        guard text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") else {
            throw ConfigurationError("database URL must start with postgres:// or postgresql:// (the value is not repeated here)")
        }
        return text
    }

    /// Reads `environment`, then `arguments` (the words after `serve`).
    /// - Throws: ``ConfigurationError`` naming the bad value; `--help` throws ``ConfigurationError/helpRequested``.
    public static func parse(arguments: [String], environment: [String: String]) throws(ConfigurationError) -> ServeConfiguration {
        var config = ServeConfiguration()
        for option in options {
            if let value = environment[option.variable] {
                do {
                    try option.apply(&config, value)
                } catch {
                    throw ConfigurationError("\(option.variable): \(error.message)")
                }
            }
        }
        let tokenFile = environment["BLUELIBRARY_TOKEN_FILE"] ?? ""
        if let token = environment["BLUELIBRARY_TOKEN"], !token.isEmpty {
            guard tokenFile.isEmpty else {
                throw ConfigurationError("BLUELIBRARY_TOKEN and BLUELIBRARY_TOKEN_FILE are both set; set one of them "
                    + "(BLUELIBRARY_TOKEN_FILE keeps the token out of the environment)")
            }
            // The same rules as `bluelibrary token set`; the message never repeats the token.
            if let problem = TokenSetting.problem(with: token) { throw ConfigurationError("BLUELIBRARY_TOKEN: \(problem)") }
            config.token = AccessToken(token)
        } else if !tokenFile.isEmpty {
            let secret = try SecretFile.read(tokenFile, variable: "BLUELIBRARY_TOKEN_FILE")
            if let problem = TokenSetting.problem(with: secret.value) {
                throw ConfigurationError("BLUELIBRARY_TOKEN_FILE: \(tokenFile): \(problem)")
            }
            config.token = AccessToken(secret.value)
            config.warnings += secret.warning.map { [$0] } ?? []
        }
        var remaining = arguments[...]
        while let word = remaining.popFirst() {
            if word == "--help" || word == "-h" { throw .helpRequested }
            if word == "--no-seed" {
                config.seed = false
                continue
            }
            let (flag, inlineValue) = splitFlag(word)
            guard let option = options.first(where: { $0.flag == flag }) else {
                throw ConfigurationError("unknown option '\(word)'; see 'bluelibrary serve --help'")
            }
            guard let value = inlineValue ?? remaining.popFirst() else {
                throw ConfigurationError("\(flag) needs a value")
            }
            do {
                try option.apply(&config, value)
            } catch {
                throw ConfigurationError("\(flag): \(error.message)")
            }
        }
        if !config.databaseReadURLs.isEmpty && config.databaseURL == nil {
            throw ConfigurationError("BLUELIBRARY_DATABASE_READ_URL (--database-read-url) names replicas, but there is no database URL "
                + "(BLUELIBRARY_DATABASE_URL or --database-url) for the primary; SQLite has no replicas")
        }
        let password = try databasePassword(environment: environment, databaseURL: config.databaseURL)
        config.databasePassword = password?.value
        config.warnings += password?.warning.map { [$0] } ?? []
        return config
    }

    /// The PostgreSQL password `BLUELIBRARY_DATABASE_PASSWORD_FILE` names, for `databaseURL`
    /// (nil: the variable is unset or empty). `serve`, `migrate` and `token set` read it alike.
    /// - Throws: ``ConfigurationError`` when the file cannot be read, when there is no database
    ///   URL (SQLite has no password), or when the URL carries a password too.
    public static func databasePassword(environment: [String: String], databaseURL: String?) throws(ConfigurationError) -> SecretFile? {
        guard let path = environment["BLUELIBRARY_DATABASE_PASSWORD_FILE"], !path.isEmpty else { return nil }
        guard let databaseURL else {
            throw ConfigurationError("BLUELIBRARY_DATABASE_PASSWORD_FILE is set but there is no database URL "
                + "(BLUELIBRARY_DATABASE_URL or --database-url); SQLite takes no password")
        }
        guard !urlHasPassword(databaseURL) else {
            throw ConfigurationError("the database URL holds a password and BLUELIBRARY_DATABASE_PASSWORD_FILE names one too; "
                + "leave it out of the URL (postgres://user@host:5432/db)")
        }
        return try SecretFile.read(path, variable: "BLUELIBRARY_DATABASE_PASSWORD_FILE")
    }

    /// Whether a `postgres://` URL carries a password: `user:password@` before the host, or a
    /// `password=` parameter.
    static func urlHasPassword(_ url: String) -> Bool {
        guard let scheme = url.range(of: "://") else { return false }
        let rest = url[scheme.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        if let at = authority.lastIndex(of: "@"), authority[..<at].contains(":") { return true }
        guard let query = rest.firstIndex(of: "?") else { return false }
        return rest[rest.index(after: query)...].split(separator: "&").contains { $0.lowercased().hasPrefix("password=") }
    }

    public static var helpText: String {
        var lines = [
            "Usage: bluelibrary serve [options]",
            "",
            "Serves the BlueLibrary HTTP API. Every option can also be set by its environment",
            "variable; a flag wins over the variable.",
            "",
        ]
        for option in options {
            let flag = option.flag + (option.placeholder.map { " " + $0 } ?? "")
            lines.append("  " + flag.padding(toLength: 28) + option.help)
            lines.append("  " + "".padding(toLength: 28) + "env \(option.variable), default \(option.defaultText)")
        }
        lines.append("  " + "--no-seed".padding(toLength: 28) + "Same as --seed off.")
        lines += [
            "",
            "Secrets come only from the environment or from files, never from flags (they would show in the process list):",
            "  BLUELIBRARY_TOKEN            the access token: its hash replaces the stored one and the lock is enabled",
            "  BLUELIBRARY_TOKEN_FILE       a file holding the token (e.g. a Compose secret, /run/secrets/NAME);",
            "                               setting both is an error",
            "  BLUELIBRARY_DATABASE_PASSWORD_FILE",
            "                               a file holding the PostgreSQL password, for a database URL without one",
            "                               (any character works, @ / : included, no percent-encoding)",
            "A secret file's trailing newline is ignored; one that others may read is used, with a warning.",
        ]
        return lines.joined(separator: "\n")
    }

    private static func splitFlag(_ word: String) -> (String, String?) {
        guard let eq = word.firstIndex(of: "=") else { return (word, nil) }
        return (String(word[..<eq]), String(word[word.index(after: eq)...]))
    }

    static func integer(_ text: String, in range: ClosedRange<Int>, name: String) throws(ConfigurationError) -> Int {
        guard let value = Int(text.trimmingASCIIWhitespace()), range.contains(value) else {
            throw ConfigurationError("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return value
    }

    static func seconds(_ text: String, name: String) throws(ConfigurationError) -> Duration {
        guard let value = Double(text.trimmingASCIIWhitespace()), value > 0, value <= 86_400 else {
            throw ConfigurationError("\(name) must be a number of seconds above 0, not '\(text)'")
        }
        return .milliseconds(Int64(value * 1000))
    }

    static func boolean(_ text: String, name: String) throws(ConfigurationError) -> Bool {
        switch text.lowercased() {
        case "on", "true", "1", "yes": return true
        case "off", "false", "0", "no": return false
        default: throw ConfigurationError("\(name) must be on or off, not '\(text)'")
        }
    }

    static func isIPAddress(_ text: String) -> Bool { IPAddress(text) != nil }
}

/// A configuration mistake; the message is the one line the operator sees before exit code 2.
public struct ConfigurationError: Error, Equatable, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public static let helpRequested = ConfigurationError("help requested")
}

extension String {
    func padding(toLength length: Int) -> String {
        count >= length ? self + " " : self + String(repeating: " ", count: length - count)
    }
}
