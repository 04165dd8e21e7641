import Essentials
import Foundation
import HTTPServer
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

@Suite(.ownThreads) struct ServeConfigurationTests {
    @Test func defaultsServeOnLoopbackPort8080WithDataInDotDataAndNoCORS() throws {
        let config = try ServeConfiguration.parse(arguments: [], environment: [:])
        #expect(config.host == "127.0.0.1")
        #expect(config.corsOrigins.isEmpty)
        #expect(config.port == 8080)
        #expect(config.dataDirectory == "./data")
        #expect(config.logLevel == .info)
        #expect(config.accessLog)
        #expect(config.seed)
        #expect(config.trustedProxies.isEmpty)
        #expect(config.coverMaxPixels == 25_000_000)
    }

    @Test func environmentIsReadAndFlagsWinOverIt() throws {
        // Given the environment names one port and a flag another
        let env = ["BLUELIBRARY_PORT": "9000", "BLUELIBRARY_HOST": "::", "BLUELIBRARY_LOG_LEVEL": "debug",
                   "BLUELIBRARY_DATA_DIR": "/tmp/x", "BLUELIBRARY_TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1"]
        // When both are parsed
        let config = try ServeConfiguration.parse(arguments: ["--port", "9100", "--access-log=off"], environment: env)
        // Then the flag wins and the rest comes from the environment
        #expect(config.port == 9100)
        #expect(config.host == "::")
        #expect(config.logLevel == .debug)
        #expect(config.dataDirectory == "/tmp/x")
        #expect(!config.accessLog)
        #expect(config.trustedProxies.map(\.description) == ["10.0.0.0/8", "127.0.0.1"])
    }

    @Test func eventThreadsHubIdlenessAndSendBuffersAreConfigurable() throws {
        let defaults = try ServeConfiguration.parse(arguments: [], environment: [:])
        #expect(defaults.eventThreads == 2)
        #expect(defaults.eventHubIdle == .seconds(60))
        #expect(defaults.limits.streamSendBufferBytes == 32 * 1024)
        #expect(defaults.limits.maxUnsentStreamBytes == 256 * 1024)
        let env = ["BLUELIBRARY_EVENT_THREADS": "4", "BLUELIBRARY_EVENT_HUB_IDLE": "30", "BLUELIBRARY_EVENT_SEND_BUFFER": "8192"]
        let config = try ServeConfiguration.parse(arguments: ["--event-threads", "3", "--event-max-unsent", "65536"], environment: env)
        #expect(config.eventThreads == 3)
        #expect(config.eventHubIdle == .seconds(30))
        #expect(config.limits.streamSendBufferBytes == 8192)
        #expect(config.limits.maxUnsentStreamBytes == 65536)
        #expect(throws: ConfigurationError("--event-threads: event threads must be a whole number from 1 to 64, not '0'")) {
            try ServeConfiguration.parse(arguments: ["--event-threads", "0"], environment: [:])
        }
    }

    @Test func badValuesSayWhichSettingAndWhatIsAllowed() {
        func message(_ args: [String], _ env: [String: String] = [:]) -> String? {
            do {
                _ = try ServeConfiguration.parse(arguments: args, environment: env)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(message(["--port", "70000"]) == "--port: port must be a whole number from 0 to 65535, not '70000'")
        #expect(message([], ["BLUELIBRARY_PORT": "http"]) == "BLUELIBRARY_PORT: port must be a whole number from 0 to 65535, not 'http'")
        #expect(message(["--host", "localhost"])?.contains("must be an IP address") == true)
        #expect(message(["--log-level", "loud"])?.contains("debug, info, warning or error") == true)
        #expect(message(["--trusted-proxies", "10.0.0.0/33"])?.contains("is not an address or CIDR") == true)
        #expect(message(["--bogus"]) == "unknown option '--bogus'; see 'bluelibrary serve --help'")
        #expect(message(["--port"]) == "--port needs a value")
    }

    @Test func helpListsEveryOptionWithItsVariable() throws {
        #expect(throws: ConfigurationError.helpRequested) { try ServeConfiguration.parse(arguments: ["--help"], environment: [:]) }
        let help = ServeConfiguration.helpText
        for name in ["--host", "--port", "--data-dir", "--log-level", "--trusted-proxies", "BLUELIBRARY_HOST",
                     "BLUELIBRARY_PORT", "BLUELIBRARY_DATA_DIR", "BLUELIBRARY_LOG_LEVEL", "BLUELIBRARY_TRUSTED_PROXIES"] {
            #expect(help.contains(name), "help lacks \(name)")
        }
    }

    /// Every `BLUELIBRARY_*` variable the server's sources read is in `serve --help`; only the
    /// client commands' own variables (the server URL, the client token and timeout, the
    /// replica) are not.
    @Test func helpListsEveryVariableTheServerReads() throws {
        let clientOnly: Set<String> = ["BLUELIBRARY_URL", "BLUELIBRARY_CLIENT_TOKEN", "BLUELIBRARY_CLIENT_TIMEOUT", "BLUELIBRARY_REPLICA"]
        let sources = NginxProxy.repositoryRoot.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
        var read: Set<String> = []
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: /"(BLUELIBRARY_[A-Z0-9_]+)"/) { read.insert(String(match.1)) }
        }
        #expect(read.contains("BLUELIBRARY_PORT") && read.contains("BLUELIBRARY_TOKEN"), "the scan found the variables: \(read.sorted())")
        let help = ServeConfiguration.helpText
        for variable in read.subtracting(clientOnly).sorted() {
            let named = help.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") }).contains { $0 == variable }
            #expect(named, "serve --help lacks \(variable)")
        }
    }

    @Test func forwardedHeaderFamilyDefaultsToXForwardedAndOnlyThatFamilyIsRead() throws {
        #expect(try ServeConfiguration.parse(arguments: [], environment: [:]).forwardedHeaders == .xForwarded)
        let config = try ServeConfiguration.parse(arguments: [], environment: ["BLUELIBRARY_FORWARDED_HEADERS": "forwarded"])
        #expect(config.forwardedHeaders == .forwarded)
        #expect(throws: ConfigurationError.self) { try ServeConfiguration.parse(arguments: ["--forwarded-headers", "both"], environment: [:]) }

        var headers = HTTPHeaders()
        headers.add("Forwarded", "for=198.51.100.1;proto=https")
        headers.add("X-Forwarded-For", "203.0.113.7, 192.0.2.9, 10.0.0.2")
        let trusted = [IPAddressRange("10.0.0.0/8")!]
        let x = ForwardedHeaders(headers, family: .xForwarded)
        #expect(x.client(trusting: trusted) == "192.0.2.9", "the rightmost untrusted hop, not the client's own entry")
        #expect(x.proto == nil, "Forwarded's proto is not read in the x-forwarded family")
        let f = ForwardedHeaders(headers, family: .forwarded)
        #expect(f.client(trusting: trusted) == "198.51.100.1")
        #expect(f.proto == "https")
        #expect(ForwardedHeaders(HTTPHeaders(), family: .xForwarded).client(trusting: trusted) == nil)
    }

    @Test func timeoutsAcceptFractionsOfSeconds() throws {
        let config = try ServeConfiguration.parse(arguments: ["--head-timeout", "0.5"], environment: [:])
        #expect(config.limits.headTimeout == .milliseconds(500))
    }

    @Test func minimumBodyRateIsConfigurable() throws {
        #expect(try ServeConfiguration.parse(arguments: [], environment: [:]).limits.minBodyBytesPerSecond == 1024)
        let off = try ServeConfiguration.parse(arguments: ["--min-body-rate", "0"], environment: [:])
        #expect(off.limits.minBodyBytesPerSecond == 0)
        let env = try ServeConfiguration.parse(arguments: [], environment: ["BLUELIBRARY_MIN_BODY_RATE": "4096"])
        #expect(env.limits.minBodyBytesPerSecond == 4096)
        #expect(throws: ConfigurationError.self) { try ServeConfiguration.parse(arguments: ["--min-body-rate", "-1"], environment: [:]) }
    }

    @Test func theExportWaitIsConfigurable() throws {
        #expect(try ServeConfiguration.parse(arguments: [], environment: [:]).exports.queueDeadline == .seconds(10))
        #expect(try ServeConfiguration.parse(arguments: ["--export-wait", "60"], environment: [:]).exports.queueDeadline == .seconds(60))
        let env = try ServeConfiguration.parse(arguments: [], environment: ["BLUELIBRARY_EXPORT_WAIT": "2.5"])
        #expect(env.exports.queueDeadline == .milliseconds(2500))
        #expect(throws: ConfigurationError.self) { try ServeConfiguration.parse(arguments: ["--export-wait", "0"], environment: [:]) }
    }

    @Test func diskReserveIsConfigurable() throws {
        #expect(try ServeConfiguration.parse(arguments: [], environment: [:]).diskReserveBytes == 32 << 20)
        #expect(try ServeConfiguration.parse(arguments: ["--disk-reserve-bytes", "0"], environment: [:]).diskReserveBytes == 0)
        let env = try ServeConfiguration.parse(arguments: [], environment: ["BLUELIBRARY_DISK_RESERVE_BYTES": "1048576"])
        #expect(env.diskReserveBytes == 1 << 20)
        #expect(throws: ConfigurationError.self) { try ServeConfiguration.parse(arguments: ["--disk-reserve-bytes", "-1"], environment: [:]) }
    }

    @Test func theReadLaneAndTheWorkerQueueAreConfigurableWithStatedDefaults() throws {
        let plain = try ServeConfiguration.parse(arguments: [], environment: [:])
        #expect(plain.readQueue == 256 && plain.maxReadsPerClient == 4 && plain.workerQueue == 1024 && plain.readWorkers == nil)
        #expect(plain.defaultReadWorkers == 3, "SQLite: its 4 readers less one")
        let postgres = try ServeConfiguration.parse(arguments: [], environment: ["BLUELIBRARY_DATABASE_URL": "postgres://db/x"])
        #expect(postgres.defaultReadWorkers == 5, "PostgreSQL: half the pool")
        let env = try ServeConfiguration.parse(arguments: ["--read-queue", "0", "--max-reads-per-client=2"], environment: [
            "BLUELIBRARY_READ_WORKERS": "6", "BLUELIBRARY_READ_QUEUE": "64", "BLUELIBRARY_MAX_READS_PER_CLIENT": "0",
            "BLUELIBRARY_WORKER_QUEUE": "10",
        ])
        #expect(env.readWorkers == 6 && env.defaultReadWorkers == 6 && env.workerQueue == 10)
        #expect(env.readQueue == 0 && env.maxReadsPerClient == 2, "flags win")
        #expect(try ServeConfiguration.parse(arguments: ["--max-reads-per-client", "0"], environment: [:]).maxReadsPerClient == 0)
        for bad in [["--read-workers", "0"], ["--read-queue", "-1"], ["--worker-queue", "0"], ["--max-reads-per-client", "x"]] {
            #expect(throws: ConfigurationError.self) { try ServeConfiguration.parse(arguments: bad, environment: [:]) }
        }
        for variable in ["BLUELIBRARY_READ_WORKERS", "BLUELIBRARY_READ_QUEUE", "BLUELIBRARY_MAX_READS_PER_CLIENT", "BLUELIBRARY_WORKER_QUEUE"] {
            #expect(ServeConfiguration.helpText.contains(variable))
        }
    }

    @Test func databaseURLAndPoolSizeChooseAndBoundPostgreSQL() throws {
        let plain = try ServeConfiguration.parse(arguments: [], environment: [:])
        #expect(plain.databaseURL == nil && plain.databasePoolSize == 10, "SQLite unless a URL is given")
        let env = try ServeConfiguration.parse(arguments: [], environment: [
            "BLUELIBRARY_DATABASE_URL": "postgres://app:secret@db:5432/library", "BLUELIBRARY_DATABASE_POOL_SIZE": "4",
        ])
        #expect(env.databaseURL == "postgres://app:secret@db:5432/library" && env.databasePoolSize == 4)
        let flags = try ServeConfiguration.parse(
            arguments: ["--database-url", "postgresql://localhost/x", "--database-pool-size=2"],
            environment: ["BLUELIBRARY_DATABASE_URL": "postgres://elsewhere/y"])
        #expect(flags.databaseURL == "postgresql://localhost/x" && flags.databasePoolSize == 2)
        #expect(try ServeConfiguration.parse(arguments: [], environment: ["BLUELIBRARY_DATABASE_URL": ""]).databaseURL == nil)
        do {
            _ = try ServeConfiguration.parse(arguments: ["--database-url", "mysql://root:hunter2@db/x"], environment: [:])
            Issue.record("a URL of another database is refused")
        } catch {
            #expect(error.message.contains("postgres://") && !error.message.contains("hunter2"), "the password is never repeated")
        }
        #expect(throws: ConfigurationError.self) { try ServeConfiguration.parse(arguments: ["--database-pool-size", "0"], environment: [:]) }
        #expect(ServeConfiguration.helpText.contains("BLUELIBRARY_DATABASE_POOL_SIZE"))
    }

    @Test func readReplicasNeedThePrimaryAndTakeSeveralURLs() throws {
        let plain = try ServeConfiguration.parse(arguments: [], environment: [:])
        #expect(plain.databaseReadURLs.isEmpty && plain.replicaMaxLag == .seconds(1) && plain.replicaWait == .milliseconds(100))
        let two = try ServeConfiguration.parse(arguments: ["--replica-wait", "0.25"], environment: [
            "BLUELIBRARY_DATABASE_URL": "postgres://db1/library",
            "BLUELIBRARY_DATABASE_READ_URL": " postgres://db2/library\tpostgresql://db3,db4/library?target_session_attrs=standby ",
            "BLUELIBRARY_REPLICA_MAX_LAG": "5",
        ])
        #expect(two.databaseReadURLs == ["postgres://db2/library", "postgresql://db3,db4/library?target_session_attrs=standby"])
        #expect(two.replicaMaxLag == .seconds(5) && two.replicaWait == .milliseconds(250))
        do {
            _ = try ServeConfiguration.parse(arguments: [], environment: ["BLUELIBRARY_DATABASE_READ_URL": "postgres://db2/library"])
            Issue.record("replicas without a primary are refused")
        } catch {
            #expect(error.message.contains("BLUELIBRARY_DATABASE_URL"))
        }
        #expect(throws: ConfigurationError.self) {
            try ServeConfiguration.parse(arguments: ["--database-url", "postgres://db1/x", "--database-read-url", "mysql://db2/x"], environment: [:])
        }
        #expect(throws: ConfigurationError.self) { try ServeConfiguration.parse(arguments: ["--replica-max-lag", "0"], environment: [:]) }
        for variable in ["BLUELIBRARY_DATABASE_READ_URL", "BLUELIBRARY_REPLICA_MAX_LAG", "BLUELIBRARY_REPLICA_WAIT"] {
            #expect(ServeConfiguration.helpText.contains(variable))
        }
    }
}
