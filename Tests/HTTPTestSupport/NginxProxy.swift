#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// A real nginx in front of a test server, configured from the project's
/// `deploy/nginx.conf.example` with only its ports swapped (plus, optionally, a TLS listener
/// with a throw-away certificate, as a TLS-terminating proxy would have).
public final class NginxProxy {
    public let port: Int
    public let tlsPort: Int?
    private let process: RunningChild
    private let directory: URL

    public static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    public static var executable: String? {
        ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// nginx running `deploy/nginx.conf.example` in front of one server on `upstreamPort`.
    public convenience init(upstreamPort: Int, tls: Bool = false) throws {
        try self.init(site: Self.deploySite("nginx.conf.example", upstreamPorts: [upstreamPort]), tls: tls)
    }

    /// nginx running `site` (from ``deploySite(_:upstreamPorts:)``, perhaps edited by a test).
    /// A server in it that listens on `listen 443 ssl http2;` (a TLS server uncommented from a
    /// deploy file) gets a free port, ``tlsPort``, and a throw-away certificate instead of the
    /// file's `ssl_certificate` and `ssl_certificate_key`.
    public convenience init(site: String) throws {
        try self.init(site: site, tls: false)
    }

    /// The text of `deploy/<name>` (`nginx.conf.example` or `nginx.scale-out.conf`) with its
    /// upstream pointed at servers on `upstreamPorts`: nginx.conf.example's one `server
    /// 127.0.0.1:8080;` line takes one port; nginx.scale-out.conf's `server bluelibrary-<n>:8080
    /// <options>;` lines become one line per port, each with the same options (which the file's
    /// lines must share).
    public static func deploySite(_ name: String, upstreamPorts: [Int]) throws -> String {
        let site = try deployFile(name)
        if name == "nginx.conf.example" {
            guard site.contains("server 127.0.0.1:8080;"), upstreamPorts.count == 1 else {
                throw RawHTTPClient.ClientError(description: "deploy/nginx.conf.example changed shape (or more than one port given); update NginxProxy")
            }
            return site.replacingOccurrences(of: "server 127.0.0.1:8080;", with: "server 127.0.0.1:\(upstreamPorts[0]);")
        }
        let lines = site.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let serverLines = lines.indices.filter { lines[$0].range(of: #"^\s*server bluelibrary-\d+:8080\b"#, options: .regularExpression) != nil }
        let options = Set(serverLines.map { index in
            lines[index].replacingOccurrences(of: #"^\s*server bluelibrary-\d+:8080"#, with: "", options: .regularExpression)
        })
        guard let first = serverLines.first, serverLines == Array(first..<(first + serverLines.count)), options.count == 1,
            let option = options.first, !upstreamPorts.isEmpty
        else {
            throw RawHTTPClient.ClientError(description: "deploy/\(name) changed shape (one block of server lines with the same options); update NginxProxy")
        }
        let servers = upstreamPorts.map { "    server 127.0.0.1:\($0)\(option)" }
        return (Array(lines[..<first]) + servers + Array(lines[(first + serverLines.count)...])).joined(separator: "\n")
    }

    /// What nginx logged so far (level warn and above), e.g. "an upstream response is buffered
    /// to a temporary file".
    public var errorLog: String {
        (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    /// nginx serving one server under a path prefix (`/music/` → the server's `/`), as a
    /// proxy that mounts the service below its own root would; streams pass unbuffered. With
    /// `forwardsPrefix` it says so as the example in docs/proxy.md does
    /// (`proxy_set_header X-Forwarded-Prefix /music;`, replacing whatever the client sent), and
    /// forwards the client address, scheme and host.
    public convenience init(upstreamPort: Int, pathPrefix: String, forwardsPrefix: Bool = false) throws {
        precondition(pathPrefix.hasPrefix("/") && pathPrefix.hasSuffix("/") && pathPrefix.count > 1, "a prefix like /music/")
        let forwarded = forwardsPrefix ? """
                    proxy_set_header X-Forwarded-Prefix \(pathPrefix.dropLast());
                    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
                    proxy_set_header X-Forwarded-Proto $scheme;
                    proxy_set_header X-Forwarded-Host $http_host;
            """ : ""
        let site = """
            server {
                listen 80;
                location \(pathPrefix) {
                    proxy_pass http://127.0.0.1:\(upstreamPort)/;
                    proxy_http_version 1.1;
                    proxy_set_header Connection "";
                    proxy_set_header Host $http_host;
            \(forwarded)
                    proxy_buffering off;
                    proxy_read_timeout 1h;
                }
            }
            """
        try self.init(site: site, tls: false)
    }

    /// nginx running `deploy/nginx.scale-out.conf` (the compose setup's proxy) in front of
    /// several instances, one `server` line per port in `instancePorts`.
    public convenience init(instancePorts: [Int]) throws {
        try self.init(site: Self.deploySite("nginx.scale-out.conf", upstreamPorts: instancePorts), tls: false)
    }

    /// The text of `deploy/<name>`.
    public static func deployFile(_ name: String) throws -> String {
        try String(contentsOf: repositoryRoot.appendingPathComponent("deploy").appendingPathComponent(name), encoding: .utf8)
    }

    /// Runs `site` (a server configuration for inside `http { }`, listening on port 80) on a free port.
    private init(site: String, tls: Bool) throws {
        var site = site
        guard let nginx = Self.executable else {
            throw RawHTTPClient.ClientError(description: "nginx is not installed (scripts/test installs nginx-light)")
        }
        directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("nginx-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        port = try Self.freePort()
        let tlsServer = site.contains("listen 443 ssl http2;")
        tlsPort = tls || tlsServer ? try Self.freePort() : nil
        if tlsServer, let tlsPort {
            try Self.makeCertificate(in: directory)
            site = site.replacingOccurrences(of: "listen 443 ssl http2;", with: "listen 127.0.0.1:\(tlsPort) ssl;")
                .replacingOccurrences(of: #"ssl_certificate\s+[^;]+;"#, with: "ssl_certificate \(directory.path)/cert.pem;", options: .regularExpression)
                .replacingOccurrences(of: #"ssl_certificate_key\s+[^;]+;"#, with: "ssl_certificate_key \(directory.path)/key.pem;", options: .regularExpression)
        }

        guard site.contains("listen 80;") else {
            throw RawHTTPClient.ClientError(description: "the nginx site no longer listens on port 80; update NginxProxy")
        }
        var listen = "listen 127.0.0.1:\(port);"
        if tls, let tlsPort {
            try Self.makeCertificate(in: directory)
            listen += """

                listen 127.0.0.1:\(tlsPort) ssl;
                ssl_certificate \(directory.path)/cert.pem;
                ssl_certificate_key \(directory.path)/key.pem;
            """
        }
        site = site.replacingOccurrences(of: "listen 80;", with: listen)
        let temp = directory.appendingPathComponent("tmp").path
        let main = """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(directory.path)/nginx.pid;
            error_log \(directory.path)/error.log warn;
            events { worker_connections 512; }
            http {
                access_log off;
                client_body_temp_path \(temp)/body;
                proxy_temp_path \(temp)/proxy;
                fastcgi_temp_path \(temp)/fastcgi;
                uwsgi_temp_path \(temp)/uwsgi;
                scgi_temp_path \(temp)/scgi;
            \(site)
            }
            """
        let config = directory.appendingPathComponent("nginx.conf")
        try main.write(to: config, atomically: true, encoding: .utf8)
        process = try RunningChild(
            nginx, ["-c", config.path, "-p", directory.path], environment: ProcessInfo.processInfo.environment, captureOutput: false)
        var listening = false
        eventually(timeout: .seconds(10), pollingEvery: .milliseconds(20)) {
            listening = RawHTTPClient.probe(port: port) == 0
            return listening || !process.isRunning
        }
        if listening { return }
        let log = (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
        process.terminate()
        throw RawHTTPClient.ClientError(description: "nginx did not start: \(log)")
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// A loopback port nothing listens on, for a server started a moment later (or started
    /// again after a stop): taken below the kernel's ephemeral range (32768 and up), so no
    /// outgoing connection of the busy test process can be given it as its own port in
    /// between, and never the same one twice in a process.
    public static func freePort() throws -> Int {
        for _ in 0..<500 {
            let port = Int.random(in: 15_000..<32_768)
            guard handedOut.withLock({ $0.insert(port).inserted }), canBind(port) else { continue }
            return port
        }
        throw RawHTTPClient.ClientError(description: "no free port below 32768")
    }

    private static let handedOut = Mutex<Set<Int>>([])

    private static func canBind(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// A self-signed certificate for 127.0.0.1 (with `ChildProcess`: see there why not `Process`).
    static func makeCertificate(in directory: URL) throws {
        let outcome = try ChildProcess.run(
            "/usr/bin/env",
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
             "-keyout", directory.appendingPathComponent("key.pem").path, "-out", directory.appendingPathComponent("cert.pem").path],
            environment: ProcessInfo.processInfo.environment, mergeStderr: true)
        guard outcome.status == 0 else {
            throw RawHTTPClient.ClientError(description: "openssl could not make a certificate: \(String(decoding: outcome.stdout, as: UTF8.self))")
        }
    }
}

/// curl, for what the raw client cannot speak (TLS).
public enum Curl {
    /// Runs curl with `arguments` plus `-sS -k -i`; returns the raw response (head and body), or
    /// throws curl's own account of what failed (a refused connection, a TLS error, the time
    /// limit: a bound on a transfer that hangs, generous for a loaded machine, not a timing).
    public static func run(_ arguments: [String]) throws -> String {
        let outcome = try ChildProcess.run(
            "/usr/bin/env", ["curl", "-sS", "-k", "-i", "--max-time", "120"] + arguments, environment: ProcessInfo.processInfo.environment)
        guard outcome.status == 0 else {
            throw RawHTTPClient.ClientError(
                description: "curl exited with \(outcome.status): \(String(decoding: outcome.stderr, as: UTF8.self))")
        }
        return String(decoding: outcome.stdout, as: UTF8.self)
    }
}
