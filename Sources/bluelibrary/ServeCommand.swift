#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryServer
import Dispatch
import Essentials
import Foundation

enum ServeCommand {
    /// The configuration from the environment and `arguments`; prints help or a one-line
    /// error (exit 2) instead of returning when it must.
    static func configuration(from arguments: [String]) -> ServeConfiguration {
        let result = Result { () throws(ConfigurationError) -> ServeConfiguration in
            try ServeConfiguration.parse(arguments: arguments, environment: ProcessInfo.processInfo.environment)
        }
        switch result {
        case let .success(configuration):
            return configuration
        case let .failure(error) where error == .helpRequested:
            print(ServeConfiguration.helpText)
            exit(0)
        case let .failure(error):
            fail(error.message)
        }
    }

    /// Runs until SIGTERM or SIGINT, then drains and exits 0. A second signal exits at once.
    static func run(_ configuration: ServeConfiguration) -> Never {
        signal(SIGPIPE, SIG_IGN)
        // Memory freed after large answers goes back to the system (see MemoryTrimmer).
        MemoryTrimmer.configureAllocator(environment: ProcessInfo.processInfo.environment)
        let logger = JSONLogger(level: configuration.logLevel)
        let app: BlueLibraryApp
        do {
            app = try BlueLibraryApp(configuration: configuration, logger: logger)
        } catch let error as ConfigurationError {
            fail(error.message)
        } catch {
            fail("cannot start: \(error)")
        }

        let signals = DispatchQueue(label: "signals")
        var sources: [any DispatchSourceSignal] = []
        let stopping = SignalLatch()
        // Signalled once `app.shutdown()` has returned: drained, workers stopped, WAL checkpointed.
        let shutDown = DispatchSemaphore(value: 0)
        for signalNumber in [SIGTERM, SIGINT] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: signals)
            source.setEventHandler {
                if stopping.trip() {
                    let thread = Thread {
                        app.shutdown()
                        shutDown.signal()
                    }
                    thread.start()
                } else {
                    logger.log(.warning, "second signal: exiting at once")
                    exit(1)
                }
            }
            source.resume()
            sources.append(source)
        }
        app.start()
        MemoryTrimmer.shared.start()
        let addressFile = announce(app, configuration: configuration, logger: logger)
        shutDown.wait()
        addressFile.map { ListeningAddressFile.remove(at: $0) }
        logger.log(.info, "stopped", always: true)
        withExtendedLifetime(sources) {}
        exit(0)
    }

    /// Writes where the server listens into the data directory for `bluelibrary healthcheck`
    /// (see ``ListeningAddressFile``); returns the file's path, or nil (with a warning) when it
    /// could not be written: the healthcheck then falls back to `BLUELIBRARY_PORT`.
    static func announce(_ app: BlueLibraryApp, configuration: ServeConfiguration, logger: JSONLogger) -> String? {
        let path = ListeningAddressFile.path(dataDirectory: configuration.dataDirectory)
        do {
            try ListeningAddressFile(host: configuration.host, port: app.port).write(to: path)
            return path
        } catch {
            logger.log(.warning, "cannot write the listening address for 'bluelibrary healthcheck'",
                       [("path", .string(path)), ("error", .string("\(error)"))])
            return nil
        }
    }
}

/// Remembers whether a stop signal came already (touched only on the signal queue).
final class SignalLatch: @unchecked Sendable {
    private var tripped = false
    /// Returns true the first time.
    func trip() -> Bool {
        defer { tripped = true }
        return !tripped
    }
}
