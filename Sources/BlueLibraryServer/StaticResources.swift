import Foundation
import Gzip
import HTTPServer

/// The files of one directory of the resource bundle (`Resources/<name>`, copied with
/// `.copy("Resources/<name>")` in Package.swift), read once at start and served from memory
/// at a mount point such as `/app`:
///
/// - `GET /app` → `301` to `app/` (a relative reference, so it also works under a proxy's
///   path prefix);
/// - `GET /app/` → `index.html`;
/// - `GET /app/{file}` → that file; any name not in the directory is 404. Only names read at
///   start are ever looked up (a dictionary, not the file system), so `..`, `%2F` or an
///   absolute path cannot reach anything else.
///
/// Every file answer has a strong `ETag` (304 on a matching `If-None-Match`),
/// `Cache-Control: no-cache` (revalidate: the names carry no version),
/// `X-Content-Type-Options: nosniff` and its `Content-Type` by extension; HTML also gets the
/// mount's `Content-Security-Policy` and `Referrer-Policy: no-referrer`. A text file (HTML,
/// CSS, JavaScript, JSON, SVG, YAML, plain text) is also kept gzipped, made once at start, and
/// sent so (`Content-Encoding: gzip`, its own ETag) to a request whose `Accept-Encoding`
/// allows gzip (`ContentCoding`); both forms say `Vary: Accept-Encoding`. `HEAD` is answered
/// by the `GET` routes. The directory is flat: a subdirectory is refused at start (its files
/// could not be reached).
///
/// ```swift
/// let docs = try StaticResources(bundleDirectory: "docs")
/// docs.register(at: "/docs", into: &routes)
/// ```
/// The mount must also be listed in ``AccessPolicy/alwaysOpenPrefixes`` when it should stay
/// reachable with `protectReads` on.
struct StaticResources: Sendable {
    /// One file, ready to send: as it is, and gzipped when that is smaller (a text file).
    struct File: Sendable {
        let response: HTTPResponse
        let gzipped: HTTPResponse?

        /// The form `request` takes.
        func response(for request: HTTPRequest) -> HTTPResponse {
            if let gzipped, ContentCoding.acceptsGzip(request.headers["Accept-Encoding"]) { return gzipped }
            return response
        }
    }

    /// The Content-Security-Policy of the app's HTML: nothing from another origin, no inline
    /// script or style, no plugins, not framed, forms only to this server.
    static let appPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
        + "connect-src 'self'; manifest-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    /// The Content-Security-Policy of the API reference (`/docs`): its own style sheet, no
    /// script at all, nothing from another origin.
    static let docsPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// File name → file.
    let files: [String: File]
    /// The file `GET <mount>/` answers with (also in `files`, by its name).
    let index: File

    /// Reads every file of the bundle's `Resources/<bundleDirectory>`.
    /// - Throws: ``ConfigurationError`` when the directory is missing from the bundle, holds a
    ///   subdirectory, has no `indexName`, or a file cannot be read.
    init(bundleDirectory: String, contentSecurityPolicy: String = Self.appPolicy, indexName: String = "index.html") throws {
        guard let url = Bundle.module.url(forResource: bundleDirectory, withExtension: nil) else {
            throw ConfigurationError("\(bundleDirectory)/ is missing from the resource bundle (BlueLibrary_BlueLibraryServer.resources beside the executable)")
        }
        try self.init(directory: url, contentSecurityPolicy: contentSecurityPolicy, indexName: indexName)
    }

    /// Reads every file of `directory` (tests use a directory of their own).
    init(directory: URL, contentSecurityPolicy: String = Self.appPolicy, indexName: String = "index.html") throws {
        var contents: [String: [UInt8]] = [:]
        do {
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
                let url = directory.appendingPathComponent(name)
                var isDirectory: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
                guard !isDirectory.boolValue else {
                    throw ConfigurationError("\(url.path) is a directory: static resources are served from one flat directory")
                }
                contents[name] = Array(try Data(contentsOf: url))
            }
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError("cannot read the static resources in \(directory.path): \(error.localizedDescription)")
        }
        try self.init(contents: contents, contentSecurityPolicy: contentSecurityPolicy, indexName: indexName)
    }

    /// Serves `contents` (file name → bytes).
    init(contents: [String: [UInt8]], contentSecurityPolicy: String = Self.appPolicy, indexName: String = "index.html") throws {
        var files: [String: File] = [:]
        for (name, bytes) in contents {
            files[name] = Self.file(bytes, name: name, contentSecurityPolicy: contentSecurityPolicy)
        }
        guard let index = files[indexName] else {
            throw ConfigurationError("the static resources have no \(indexName)")
        }
        self.files = files
        self.index = index
    }

    /// Total size of the files in bytes (as they are, not gzipped).
    var totalBytes: Int {
        files.values.reduce(0) { total, file in
            if case let .bytes(bytes) = file.response.body { return total + bytes.count }
            return total
        }
    }

    /// Adds `GET <mount>`, `GET <mount>/` and `GET <mount>/{file}` (and so `HEAD`) to `routes`.
    /// - Parameter mount: an absolute path without a trailing slash, such as `/app`.
    func register(at mount: String, into routes: inout RouterBuilder) {
        precondition(mount.hasPrefix("/") && !mount.hasSuffix("/") && mount.count > 1, "mount point like /app: \(mount)")
        let lastSegment = mount.split(separator: "/").last.map(String.init) ?? ""
        let redirect = HTTPResponse(status: .movedPermanently, headers: ["Location": lastSegment + "/", "Cache-Control": "no-cache"])
        routes.add(.get, mount) { _, _ in redirect }
        routes.add(.get, mount + "/") { [index] request, _ in
            try ConditionalGET.respond(to: request, with: index.response(for: request))
        }
        routes.add(.get, mount + "/{file}") { [files] request, context in
            let name = try context.parameter("file")
            guard let file = files[name] else {
                throw HTTPError(.notFound, detail: "There is no file \(mount)/\(name); \(mount)/ is the start.")
            }
            return try ConditionalGET.respond(to: request, with: file.response(for: request))
        }
    }

    /// The complete answers for one file: as it is, and gzipped for a text file that gzip makes
    /// smaller (a gzip that fails leaves the file as it is).
    static func file(_ bytes: [UInt8], name: String, contentSecurityPolicy: String) -> File {
        let type = contentType(forName: name)
        let compressible = type.hasPrefix("text/") || ["application/json", "application/manifest+json", "image/svg+xml", "application/yaml"]
            .contains { type.hasPrefix($0) }
        let gzipped = compressible ? (try? Gzip.compress(bytes)).flatMap { $0.count < bytes.count ? $0 : nil } : nil
        func response(_ body: [UInt8], encoding: String?) -> HTTPResponse {
            var headers: HTTPHeaders = [
                // The gzipped form is another representation: its own strong ETag.
                "ETag": ETag.strong(for: body),
                "Cache-Control": "no-cache",
                "X-Content-Type-Options": "nosniff",
            ]
            if gzipped != nil { headers.set("Vary", "Accept-Encoding") }
            if let encoding { headers.set("Content-Encoding", encoding) }
            if type.hasPrefix("text/html") {
                headers.set("Content-Security-Policy", contentSecurityPolicy)
                headers.set("Referrer-Policy", "no-referrer")
            }
            return HTTPResponse(contentType: type, bytes: body, headers: headers)
        }
        return File(response: response(bytes, encoding: nil), gzipped: gzipped.map { response($0, encoding: "gzip") })
    }

    /// The media type for a file name's extension (`application/octet-stream` when unknown).
    static func contentType(forName name: String) -> String {
        let parts = name.split(separator: ".")
        switch parts.count > 1 ? parts.last!.lowercased() : "" {
        case "html", "htm": return "text/html; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "json": return "application/json"
        case "webmanifest": return "application/manifest+json"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "ico": return "image/x-icon"
        case "txt": return "text/plain; charset=utf-8"
        case "yaml", "yml": return "application/yaml"
        case "woff2": return "font/woff2"
        default: return "application/octet-stream"
        }
    }
}
