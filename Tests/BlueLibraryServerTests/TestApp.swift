import Foundation
import HTTPServer

@testable import BlueLibraryServer

/// Builds the real app on a free loopback port with its data in a fresh temporary directory.
enum TestApp {
    static func make(_ adjust: (inout ServeConfiguration) -> Void = { _ in },
                     logSink: (@Sendable ([UInt8]) -> Void)? = nil) throws -> BlueLibraryApp {
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

    static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "bluelibrary-test-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
