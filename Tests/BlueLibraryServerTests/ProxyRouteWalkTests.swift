#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// Every path of openapi.yaml through each shipped nginx config (`deploy/nginx.conf.example`,
/// `deploy/nginx.scale-out.conf`): a real nginx running the file, with its commented TLS server
/// switched on, in front of a real `bluelibrary serve` process, and the limits that apply to
/// each route checked by doing what they limit:
/// - every path reaches the server (its answer, with the server's `X-Request-Id`, whatever its
///   status, not a page of nginx's own); every ordinary body up to the server's 1 MiB passes, one byte more is 413;
/// - every archive path (its PUT takes an `ArchiveDocument`): a 40 MiB import is imported; a
///   40 MiB export read by a client that pauses is streamed, never spooled to nginx's disk;
///   an export that waits for an export slot longer than the ordinary read timeout is answered;
/// - every event-stream path (its GET answers `text/event-stream`): a stream held quiet past
///   the ordinary read timeout still delivers the next event;
/// - through the TLS server, a 2 MiB import to a library.
///
/// The walk goes through the file as shipped (its TLS server uncommented). The read timeouts
/// are what make a quiet upstream fail, and the real ones are a minute and more: the quiet
/// phases (the event stream, the export waiting for a slot) go through a second nginx running
/// a copy with every `proxy_read_timeout` divided by ``timeoutScale`` (60 s → 3 s, 600 s → 30 s,
/// 1 h → 3 min), held quiet for ``quiet``, past the ordinary one and well short of the others;
/// the shipped values are checked separately (``shippedLimits``). Only the quiet phases meet
/// the scaled timeouts, so a loaded machine (a slow 1 MiB body, a slow 40 MiB import) does not
/// look like a config that cuts a route short. The routes are found from the spec, not listed
/// here, so a route added later is walked too.
@Suite(.serialized, .timeLimit(.minutes(10)), .ownThreads) struct ProxyRouteWalkTests {
    static let configs = ["nginx.conf.example", "nginx.scale-out.conf"]
    static let timeoutScale = 20
    /// Longer than the ordinary read timeout scaled (3 s), shorter than the server's 15 s
    /// heartbeat and the archive location's scaled timeout (30 s).
    static let quiet: TimeInterval = 5
    /// The walk's server waits this long for an export slot (`--export-wait`; 10 s by default):
    /// on a loaded machine the slots the holders give back can take more than the 5 s past
    /// ``quiet`` the default leaves, and the phase is about nginx's timeout, not the server's.
    static let exportWait = 60
    static let megabyte = 1 << 20
    static let library = "walk"

    // MARK: - The routes, from the spec

    enum Kind: String { case ordinary, archive, events }

    struct Operation {
        let method: String
        /// The first media type of its request body (nil: it takes none).
        let bodyType: String?
    }

    struct Route {
        let template: String
        let operations: [Operation]
        let kind: Kind
        /// Examples the spec gives for its path parameters.
        let examples: [String: String]
    }

    /// openapi.yaml as JSON (PyYAML, which scripts/test installs).
    static func spec() throws -> [String: Any] {
        let path = NginxProxy.repositoryRoot.appendingPathComponent("openapi.yaml").path
        let run = try ChildProcess.run(
            "/usr/bin/env", ["python3", "-c", "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)", path],
            environment: ProcessInfo.processInfo.environment)
        try #require(run.status == 0, "python3 could not read openapi.yaml: \(String(decoding: run.stderr, as: UTF8.self))")
        return try #require(try JSONSerialization.jsonObject(with: Data(run.stdout)) as? [String: Any])
    }

    static func routes() throws -> [Route] {
        let spec = try spec()
        let paths = try #require(spec["paths"] as? [String: [String: Any]])
        let components = spec["components"] as? [String: [String: Any]] ?? [:]
        func resolve(_ object: Any?, in section: String) -> [String: Any]? {
            guard let object = object as? [String: Any] else { return nil }
            guard let reference = object["$ref"] as? String else { return object }
            return components[section]?[String(reference.split(separator: "/").last ?? "")] as? [String: Any]
        }
        return paths.keys.sorted().map { template in
            let item = paths[template] ?? [:]
            var operations: [Operation] = []
            var kind = Kind.ordinary
            var examples: [String: String] = [:]
            let shared = item["parameters"] as? [Any] ?? []
            for method in ["get", "put", "post", "patch", "delete"] {
                guard let operation = item[method] as? [String: Any] else { continue }
                let body = resolve(operation["requestBody"], in: "requestBodies")
                let content = body?["content"] as? [String: [String: Any]] ?? [:]
                let bodyType = content.keys.sorted { ($0 == "application/json" ? 0 : 1, $0) < ($1 == "application/json" ? 0 : 1, $1) }.first
                operations.append(Operation(method: method.uppercased(), bodyType: bodyType))
                if content.values.contains(where: { ($0["schema"] as? [String: Any])?["$ref"] as? String == "#/components/schemas/ArchiveDocument" }) {
                    kind = .archive
                }
                for response in (operation["responses"] as? [String: Any] ?? [:]).values {
                    if (resolve(response, in: "responses")?["content"] as? [String: Any])?["text/event-stream"] != nil { kind = .events }
                }
                for parameter in shared + (operation["parameters"] as? [Any] ?? []) {
                    guard let parameter = resolve(parameter, in: "parameters"), parameter["in"] as? String == "path",
                          let name = parameter["name"] as? String, let example = parameter["example"] else { continue }
                    examples[name] = "\(example)"
                }
            }
            return Route(template: template, operations: operations, kind: kind, examples: examples)
        }
    }

    // MARK: - The config under test

    /// `deploy/<name>` pointed at `port`, its TLS server uncommented.
    static func site(_ name: String, upstreamPort: Int) throws -> String {
        let site = try NginxProxy.deploySite(name, upstreamPorts: [upstreamPort])
        let tls = try #require(tlsServer(in: site), "deploy/\(name) has a commented TLS server (`# server {` ... `# }`)")
        return site + "\n" + tls
    }

    /// `site` with its read timeouts divided by ``timeoutScale``.
    static func scaled(_ site: String) -> String {
        var scaled = 0
        let lines = site.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard let match = line.firstMatch(of: /^(\s*)proxy_read_timeout (\d+)([smh]);/),
                  let value = Int(match.2), let unit = ["s": 1, "m": 60, "h": 3600][String(match.3)] else { return String(line) }
            let seconds = value * unit
            scaled += 1
            return "\(match.1)proxy_read_timeout \(max(1, seconds / timeoutScale))s;"
        }
        #expect(scaled >= 6, "every read timeout of both servers was scaled (\(scaled))")
        return lines.joined(separator: "\n")
    }

    /// The commented `server { ... }` of a deploy file, uncommented (nil: there is none).
    static func tlsServer(in site: String) -> String? {
        let lines = site.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(of: "# server {"), let end = lines[start...].firstIndex(of: "# }") else { return nil }
        return lines[start...end].map { $0 == "#" ? "" : String($0.dropFirst(2)) }.joined(separator: "\n")
    }

    /// The directive lines of the first `server { ... }` block in `text` (comments and blank
    /// lines dropped, whitespace trimmed), nested blocks included.
    static func directives(ofServerIn text: String) -> [String] {
        var inside = false
        var depth = 0
        var result: [String] = []
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if !inside {
                if line == "server {" { inside = true; depth = 1 }
                continue
            }
            if line.isEmpty || line.hasPrefix("#") { continue }
            depth += line.filter { $0 == "{" }.count - line.filter { $0 == "}" }.count
            if depth == 0 { return result }
            result.append(line)
        }
        return result
    }

    // MARK: - A server and its library

    struct Fixture {
        let server: ServerProcess
        /// The shipped file (TLS server on).
        let proxy: NginxProxy
        /// The same with its read timeouts scaled, for the quiet phases.
        let scaledProxy: NginxProxy
        let directory: TemporaryDirectory
        /// An album of the default library and one of ``library``.
        let defaultAlbum: String
        let libraryAlbum: String
    }

    static func fixture(_ name: String) throws -> Fixture {
        let directory = try TemporaryDirectory()
        // No seed: the tutorial's albums have covers on the internet, and the walk asks for covers.
        let server = try ServerProcess(arguments: ["--trusted-proxies", "127.0.0.1/32", "--no-seed", "--export-wait", "\(exportWait)"], dataDirectory: directory.path)
        let site = try site(name, upstreamPort: server.port)
        let proxy = try NginxProxy(site: site)
        let scaledProxy = try NginxProxy(site: scaled(site))
        let created = try post(server.port, "/libraries", #"{"id": "\#(library)", "name": "Walk"}"#)
        try #require(created.status == 201, "\(created.text)")
        let first = try post(server.port, "/albums", #"{"title": "Kind of Blue", "artist": "Miles Davis"}"#)
        try #require(first.status == 201, "\(first.text)")
        let album = try post(server.port, "/libraries/\(library)/albums", #"{"title": "Blue Train", "artist": "John Coltrane"}"#)
        try #require(album.status == 201, "\(album.text)")
        // The view the spec's example names, so its routes answer 200 rather than 404.
        let view = try post(server.port, "/views", #"{"id": "everything", "sources": ["default", "\#(library)"]}"#)
        try #require(view.status == 201, "\(view.text)")
        return Fixture(server: server, proxy: proxy, scaledProxy: scaledProxy, directory: directory, defaultAlbum: try #require(try first.json()["id"] as? String),
                       libraryAlbum: try #require(try album.json()["id"] as? String))
    }

    static func post(_ port: Int, _ path: String, _ json: String) throws -> RawHTTPClient.Response {
        try RawHTTPClient.request(port: port, method: "POST", path: path, headers: ["Content-Type": "application/json"], body: Array(json.utf8))
    }

    /// `template` with real values: the walk's library, an album of the library the path is in,
    /// index 0, and the spec's examples for the rest.
    static func path(_ route: Route, _ fixture: Fixture) throws -> String {
        var path = route.template
        let inLibrary = path.hasPrefix("/libraries/{lib}")
        let values = route.examples.merging(
            ["lib": library, "id": inLibrary ? fixture.libraryAlbum : fixture.defaultAlbum, "index": "0"]) { $1 }
        for (name, value) in values { path = path.replacingOccurrences(of: "{\(name)}", with: value) }
        try #require(!path.contains("{"), "no value for a parameter of \(route.template): give it an example in the spec")
        return path
    }

    // MARK: - The walk

    @Test(arguments: configs) func everyPathKeepsItsLimitsThroughTheProxy(_ name: String) throws {
        let routes = try Self.routes()
        #expect(routes.filter { $0.kind == .archive }.map(\.template) == ["/archive", "/libraries/{lib}/archive"])
        #expect(routes.filter { $0.kind == .events }.map(\.template) == ["/events", "/libraries/{lib}/events"])
        let fixture = try Self.fixture(name)
        for route in routes {
            let path = try Self.path(route, fixture)
            // Every path reaches the server (its own answer, whatever the status).
            if route.operations.contains(where: { $0.method == "GET" }) && route.kind != .events {
                let answer = try RawHTTPClient.request(port: fixture.proxy.port, path: path, receiveTimeout: 30)
                #expect(answer.header("X-Request-Id") != nil,
                        "\(name): GET \(path) did not reach the server: \(answer.status) \(answer.text.prefix(200))")
            }
            switch route.kind {
            case .ordinary:
                for operation in route.operations { try Self.checkBodyLimit(operation, path, fixture, name) }
            case .archive:
                try Self.checkArchive(path, fixture, name)
            case .events:
                try Self.checkEvents(path, fixture, name)
            }
        }
        try Self.checkTLSServer(fixture, name)
        // Ordinary bodies (up to 1 MiB) may be buffered; an archive, either way, never is.
        let spooled = (fixture.proxy.errorLog + fixture.scaledProxy.errorLog).split(separator: "\n").filter {
            $0.contains("buffered to a temporary file") && $0.contains(/request: "[A-Z]+ \/(libraries\/[^\/]+\/)?archive[ ?]/)
        }
        #expect(spooled.isEmpty, "\(name): nginx spooled an archive to disk:\n\(spooled.joined(separator: "\n"))")
    }

    /// An ordinary body of the server's limit (1 MiB) reaches the server; one byte more is 413.
    static func checkBodyLimit(_ operation: Operation, _ path: String, _ fixture: Fixture, _ name: String) throws {
        guard let type = operation.bodyType else { return }
        // `{}` padded with spaces: valid JSON, a no-op or a 4xx for every route that takes it.
        let body = Array(((type.hasPrefix("text/") ? "1" : "{}") + String(repeating: " ", count: megabyte - 2)).utf8)
        let answer = try RawHTTPClient.request(port: fixture.proxy.port, method: operation.method, path: path,
                                               headers: ["Content-Type": type], body: body, receiveTimeout: 30)
        #expect(answer.status != 413 && answer.header("X-Request-Id") != nil,
                "\(name): \(operation.method) \(path) with 1 MiB: \(answer.status) \(answer.text.prefix(200))")
        let over = try RawHTTPClient(port: fixture.proxy.port, receiveTimeout: 30)
        try over.send("\(operation.method) \(path) HTTP/1.1\r\nHost: walk\r\nContent-Type: \(type)\r\nContent-Length: \(megabyte + 1)\r\n\r\n")
        #expect(try over.readResponse().status == 413, "\(name): \(operation.method) \(path) with 1 MiB + 1 byte")
    }

    /// A 40 MiB import; an export read by a client that pauses (streamed, not spooled: checked in
    /// the error log at the end); an export that waits for a slot past the ordinary timeout.
    static func checkArchive(_ path: String, _ fixture: Fixture, _ name: String) throws {
        let current = try RawHTTPClient.request(port: fixture.server.port, path: path)
        try #require(current.status == 200, "GET \(path): \(current.status)")
        let document = try archive(replacing: current.body, albums: 125_000, seed: path.count)
        try #require(document.count >= 40 * megabyte)
        let upload = try RawHTTPClient(port: fixture.proxy.port, receiveTimeout: 180)
        let head = "PUT \(path) HTTP/1.1\r\nHost: walk\r\nContent-Type: application/json\r\nContent-Length: \(document.count)\r\n\r\n"
        _ = upload.trySend(Array(head.utf8) + document)
        let imported = try upload.readResponse()
        #expect(imported.status == 200 && imported.header("X-Request-Id") != nil,
                "\(name): a 40 MiB PUT \(path): \(imported.status) \(imported.text.prefix(300))")
        if imported.status != 200 {
            // Imported straight at the server, so the export checks below still run.
            let direct = try RawHTTPClient.request(port: fixture.server.port, method: "PUT", path: path,
                                                   headers: ["Content-Type": "application/json"], body: document, receiveTimeout: 180)
            try #require(direct.status == 200, "PUT \(path) at the server: \(direct.status)")
        }

        // A client that reads the head, then pauses: nginx must not take the rest meanwhile.
        let reader = try RawHTTPClient(port: fixture.proxy.port, receiveTimeout: 60, receiveBufferSize: 65536)
        try reader.send("GET \(path) HTTP/1.1\r\nHost: walk\r\n\r\n")
        let exportHead = try reader.readResponse(isHead: true)
        #expect(exportHead.status == 200, "\(name): GET \(path): \(exportHead.status)")
        Thread.sleep(forTimeInterval: 1.5)
        var exported = 0
        while let chunk = try reader.readChunk() { exported += chunk.count }
        #expect(exported >= 40 * megabyte, "\(name): the export of \(path) came whole (\(exported) bytes)")

        // Both export slots held by clients that stopped reading (straight at the server): an
        // export through nginx waits for one, the upstream quiet past the ordinary timeout.
        var holders: [RawHTTPClient] = []
        for _ in 0..<2 {
            let holder = try RawHTTPClient(port: fixture.server.port, receiveTimeout: 30, receiveBufferSize: 4096)
            try holder.send("GET \(path) HTTP/1.1\r\nHost: walk\r\n\r\n")
            try #require(try holder.readResponse(isHead: true).status == 200, "an export slot taken")
            holders.append(holder)
        }
        let waiting = try RawHTTPClient(port: fixture.scaledProxy.port, receiveTimeout: 90)
        try waiting.send("GET \(path) HTTP/1.1\r\nHost: walk\r\n\r\n")
        let asked = ContinuousClock.now
        Thread.sleep(forTimeInterval: quiet)
        holders.removeAll()  // closed: their exports stop and give back their slots
        let late = try waiting.readResponse()
        #expect(late.status == 200 && late.body.count >= 40 * megabyte,
                "\(name): an export of \(path) that waited \(quiet) s for a slot: \(late.status) after \(ContinuousClock.now - asked) \(late.text.prefix(200))")
    }

    /// `GET` with an event stream: held quiet past the ordinary timeout, then an event arrives.
    static func checkEvents(_ path: String, _ fixture: Fixture, _ name: String) throws {
        let subscriber = try RawHTTPClient(port: fixture.scaledProxy.port, receiveTimeout: 30)
        try subscriber.send("GET \(path) HTTP/1.1\r\nHost: walk\r\nAccept: text/event-stream\r\n\r\n")
        let head = try subscriber.readResponse(isHead: true)
        #expect(head.status == 200 && head.header("Content-Type")?.hasPrefix("text/event-stream") == true, "\(name): GET \(path): \(head.status)")
        Thread.sleep(forTimeInterval: quiet)
        let albums = path.hasPrefix("/libraries/") ? "/libraries/\(library)/albums" : "/albums"
        let added = try post(fixture.server.port, albums, #"{"title": "After the Quiet", "artist": "Walker"}"#)
        try #require(added.status == 201)
        var received = ""
        do {
            while !received.contains("album.added") {
                guard let chunk = try subscriber.readChunk() else { break }
                received += String(decoding: chunk, as: UTF8.self)
            }
        } catch {
            received += " (\(error))"
        }
        #expect(received.contains("event: album.added"),
                "\(name): the stream of \(path), quiet for \(quiet) s, delivers the next event: \(received.suffix(300))")
    }

    /// The TLS server (uncommented) serves a 2 MiB import to a library.
    static func checkTLSServer(_ fixture: Fixture, _ name: String) throws {
        let tlsPort = try #require(fixture.proxy.tlsPort, "\(name): the TLS server runs")
        let current = try RawHTTPClient.request(port: fixture.server.port, path: "/libraries/\(library)/archive")
        let document = try archive(replacing: current.body, albums: 6_500, seed: 7)
        try #require(document.count >= 2 * megabyte)
        let file = fixture.directory.file("import.json")
        try Data(document).write(to: URL(fileURLWithPath: file))
        // (No `Expect: 100-continue`: the answer is then the import's alone.)
        let answer = try Curl.run(["-X", "PUT", "-H", "Content-Type: application/json", "-H", "Expect:", "--data-binary", "@\(file)",
                                   "https://127.0.0.1:\(tlsPort)/libraries/\(library)/archive"])
        #expect(answer.hasPrefix("HTTP/1.1 200") || answer.hasPrefix("HTTP/2 200"),
                "\(name): a 2 MiB import through the TLS server: \(answer.prefix(300))")
    }

    /// An archive like the export `current` with `albums` generated albums (about 330 bytes each).
    static func archive(replacing current: [UInt8], albums: Int, seed: Int) throws -> [UInt8] {
        var head = try #require(try JSONSerialization.jsonObject(with: Data(current)) as? [String: Any])
        head["albums"] = [String]()
        head["states"] = [String]()
        let text = String(decoding: try JSONSerialization.data(withJSONObject: head), as: UTF8.self)
        let parts = text.components(separatedBy: #""albums":[]"#)
        try #require(parts.count == 2, "the archive has one albums array: \(text.prefix(200))")
        var out = Array((parts[0] + #""albums":["#).utf8)
        out.reserveCapacity(albums * 340)
        let padding = String(repeating: "x", count: 220)
        for i in 0..<albums {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            let id = "01HZY8Q6V9" + String(format: "%04d%012d", seed % 10_000, i)
            out += Array(#"{"id":"\#(id)","title":"Album \#(i) \#(padding)","artist":"Artist \#(i % 997)","genre":"Test","year":\#(1950 + i % 70),"createdAt":"2024-05-01T12:00:00.000Z","updatedAt":"2024-05-01T12:00:00.000Z"}"#.utf8)
        }
        out += Array(("]" + parts[1]).utf8)
        return out
    }

    // MARK: - The shipped values

    /// The files as shipped: the ordinary timeout and body limit, and on the archive and event
    /// locations (which cover the library routes too) the values the walk scaled.
    @Test(arguments: configs) func shippedLimits(_ name: String) throws {
        let site = try NginxProxy.deployFile(name)
        let server = Self.directives(ofServerIn: site)
        #expect(server.contains("client_max_body_size 1m;") && server.contains("proxy_read_timeout 60s;"), "\(name): \(server)")
        let archive = Self.location(#"location ~ ^/(libraries/[^/]+/)?archive$ {"#, in: server)
        #expect(archive == ["client_max_body_size 1g;", "proxy_request_buffering off;", "proxy_buffering off;",
                            "proxy_read_timeout 600s;", "proxy_pass http://bluelibrary;"], "\(name): \(archive)")
        let events = Self.location(#"location ~ ^/(libraries/[^/]+/)?events$ {"#, in: server)
        #expect(events == ["proxy_buffering off;", "proxy_cache off;", "proxy_read_timeout 1h;", "proxy_pass http://bluelibrary;"],
                "\(name): \(events)")
        // The TLS server is the port-80 one but for its listen, name, certificate and HSTS lines.
        let tls = Self.directives(ofServerIn: try #require(Self.tlsServer(in: site)))
        let tlsOnly = ["listen ", "server_name ", "ssl_", "add_header Strict-Transport-Security "]
        #expect(tls.filter { line in !tlsOnly.contains { line.hasPrefix($0) } } == server.filter { !$0.hasPrefix("listen ") && !$0.hasPrefix("server_name ") },
                "\(name): the TLS server differs from the port-80 server")
        #expect(tls.contains("listen 443 ssl http2;") && tls.contains { $0.hasPrefix("ssl_certificate ") })
    }

    /// The directives of the location opened by `opening` in a server's `directives`.
    static func location(_ opening: String, in directives: [String]) -> [String] {
        guard let start = directives.firstIndex(of: opening), let end = directives[start...].firstIndex(of: "}") else { return [] }
        return Array(directives[(start + 1)..<end])
    }
}
