import Foundation

@testable import BlueLibraryServer

/// The real app on a free loopback port with its data in a fresh temporary directory (the same
/// small helper as in BlueLibraryServerTests; test targets cannot share sources).
enum TestApp {
    static func make(_ adjust: (inout ServeConfiguration) -> Void = { _ in }) throws -> BlueLibraryApp {
        var config = ServeConfiguration()
        config.host = "127.0.0.1"
        config.port = 0
        config.accessLog = false
        config.eventLoops = 1
        config.workers = 2
        config.dataDirectory = temporaryDirectory()
        adjust(&config)
        return try BlueLibraryApp(configuration: config, logger: JSONLogger(level: .error))
    }

    static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "bluelibrary-test-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
