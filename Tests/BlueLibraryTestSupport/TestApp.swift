import BlueLibraryServer
import Foundation
import HTTPTestSupport

/// Builds the real app on a free loopback port with its data in a fresh temporary directory:
/// the one app factory of the server's and the client's tests.
public enum TestApp {
    public static func make(
        _ adjust: (inout ServeConfiguration) -> Void = { _ in },
        logSink: (@Sendable ([UInt8]) -> Void)? = nil
    ) throws -> BlueLibraryApp {
        var config = ServeConfiguration()
        config.host = "127.0.0.1"
        config.port = 0
        config.accessLog = false
        config.eventLoops = 1
        config.workers = 2
        config.dataDirectory = temporaryDirectory()
        config.diskReserveBytes = 0  // hundreds of apps: no 32 MiB reserve each (DiskFullRouteTests sets one)
        adjust(&config)
        return try BlueLibraryApp(configuration: config, logger: JSONLogger(level: logSink == nil ? .error : .info, sink: logSink))
    }

    /// A fresh data directory that stays (apps and child processes outlive the call).
    public static func temporaryDirectory() -> String {
        // Creating a directory under the temp dir does not fail on a working test machine; if it
        // does, the app that uses it reports the path.
        (try? TemporaryDirectory.create()) ?? NSTemporaryDirectory() + "bluelibrary-test-" + UUID().uuidString
    }
}
