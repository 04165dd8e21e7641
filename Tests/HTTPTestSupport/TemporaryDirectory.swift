import Foundation

/// A fresh directory under the system temp dir, removed when the value is released (or by
/// `remove()`). The one temporary directory of the test suite.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(prefix: String = "bluelibrary-test") throws {
        path = try Self.create(prefix: prefix)
    }

    /// A fresh directory that nothing removes: for an app or a child process that may outlive
    /// the scope that made it.
    public static func create(prefix: String = "bluelibrary-test") throws -> String {
        let path = NSTemporaryDirectory() + prefix + "-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    public var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    /// The path of `name` inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// The names of the files in the directory, sorted.
    public func files() -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: path))?.sorted() ?? [] }

    public func remove() { try? FileManager.default.removeItem(atPath: path) }

    deinit { remove() }
}

/// Runs `body` with a fresh temporary directory, removed when `body` returns.
public func withTemporaryDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let directory = try TemporaryDirectory()
    return try withExtendedLifetime(directory) { try body(directory.url) }
}
