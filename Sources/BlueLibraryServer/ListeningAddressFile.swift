#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Where a running `bluelibrary serve` says it listens, so that `bluelibrary healthcheck` probes
/// the port the server really bound (`serve --port N`, `--port 0`, a `--host` of its own) rather
/// than guessing from `BLUELIBRARY_PORT`.
///
/// One small JSON file in the data directory, named after the host
/// (`<data>/listening-<hostname>.json`): a container's hostname is its own, so several containers
/// sharing one data volume (the scale-out compose file) each find theirs. Written atomically once
/// the port is bound, removed at a clean stop; after a crash it stays and names a port nobody
/// answers on, which is what the healthcheck should then report.
public struct ListeningAddressFile: Sendable, Equatable, Codable {
    /// The address the server bound (`0.0.0.0`, `::`, or one address).
    public var host: String
    public var port: Int
    /// The server's process id (in a container usually 1).
    public var pid: Int32

    public init(host: String, port: Int, pid: Int32 = getpid()) {
        self.host = host
        self.port = port
        self.pid = pid
    }

    /// The address a local client connects to: loopback for a wildcard bind, else the address itself.
    public var probeHost: String {
        switch host {
        case "0.0.0.0", "": return "127.0.0.1"
        case "::", "[::]": return "::1"
        default: return host
        }
    }

    /// `<dataDirectory>/listening-<hostname>.json` (`hostname` defaults to this machine's).
    public static func path(dataDirectory: String, hostname: String = currentHostname()) -> String {
        let safe = String(hostname.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." ? $0 : "_" })
        return URL(fileURLWithPath: dataDirectory).appendingPathComponent("listening-\(safe.isEmpty ? "localhost" : safe).json").path
    }

    /// The name `gethostname(2)` gives (a container's id or its `--hostname`).
    public static func currentHostname() -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let status = buffer.withUnsafeMutableBytes { gethostname($0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count - 1) }
        guard status == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// Writes the file atomically (a temporary file renamed over it).
    public func write(to path: String) throws {
        let data = try JSONEncoder().encode(self) + Data("\n".utf8)
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// The file at `path`, or nil when there is none or it cannot be read as one.
    public static func read(from path: String) -> ListeningAddressFile? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? JSONDecoder().decode(ListeningAddressFile.self, from: data)
    }

    /// Removes the file at `path` if it still names this process (a newer server on the same
    /// host and volume may have replaced it).
    public static func remove(at path: String, ifOwnedBy pid: Int32 = getpid()) {
        guard let current = read(from: path), current.pid == pid else { return }
        unlink(path)
    }
}
