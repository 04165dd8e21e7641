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
        // Before any thread starts, so that every thread inherits the mask (see `StopSignals`).
        StopSignals.block()
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

        // Signalled once `app.shutdown()` has returned: drained, workers stopped, WAL checkpointed.
        let shutDown = DispatchSemaphore(value: 0)
        StopSignals.wait(
            first: {
                startThread(named: "shutdown") {
                    app.shutdown()
                    shutDown.signal()
                }
            },
            second: {
                logger.log(.warning, "second signal: exiting at once")
                exit(1)
            })
        app.start()
        MemoryTrimmer.shared.start()
        let addressFile = announce(app, configuration: configuration, logger: logger)
        shutDown.wait()
        addressFile.map { ListeningAddressFile.remove(at: $0) }
        logger.log(.info, "stopped", always: true)
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

/// SIGTERM and SIGINT, taken by one thread with `sigwait`. They are blocked in every thread
/// (`block()` runs before the server starts any thread, and threads inherit the mask), so one
/// that comes before the waiting thread runs stays pending and is taken then: never lost, and
/// never the default action (an abrupt exit). A dispatch signal source loses that race: it
/// wants the signal ignored (`SIG_IGN`) and registers its own handler asynchronously after
/// `resume()`, so a SIGTERM sent right after the server said "listening" could be dropped and
/// the server ran on.
enum StopSignals {
    private static var set: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        return set
    }

    /// Blocks both signals in the calling thread and in the threads it starts from now on.
    static func block() {
        var set = set
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Starts the thread that runs `first` on the first signal and `second` on the next.
    static func wait(first: @escaping @Sendable () -> Void, second: @escaping @Sendable () -> Void) {
        startThread(named: "stop-signals") {
            var set = set
            var received: Int32 = 0
            while sigwait(&set, &received) != 0 {}
            first()
            while sigwait(&set, &received) != 0 {}
            second()
        }
    }
}
