#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Dispatch
import Foundation
import Synchronization

/// A typed client for the BlueLibrary HTTP API over `URLSession`.
///
/// **Calling convention.** The typed calls (`list`, `album`, `add`, `delete`, `move`, `undo`,
/// `state`, `setState`, ...) are *synchronous*: they block the calling thread until the answer
/// arrives or the timeout passes, and throw `BlueLibraryClientError`. Do not call them from a
/// thread that the answer needs (the session's delegate queue, or the main thread of a UI app);
/// use `AlbumListModel`, or `startList(_:ifNoneMatch:completion:)`, which never block.
///
/// The client is immutable and `Sendable`: one instance can serve any number of threads.
/// Responses are never cached by `URLSession`; revalidation is explicit (`ifNoneMatch:`).
public final class BlueLibraryClient: Sendable {
    public let baseURL: URL
    /// Seconds a request may take, end to end, before it fails with `.timeout`.
    public let timeout: Double
    private let session: URLSession

    /// - Parameters:
    ///   - baseURL: where the API lives, e.g. `http://127.0.0.1:8080` (a path prefix is kept).
    ///   - timeout: seconds per request (connect, send and receive together).
    public init(baseURL: URL, timeout: Double = 10) {
        self.baseURL = baseURL
        self.timeout = timeout
        let configuration = URLSessionConfiguration.ephemeral
        // FoundationNetworking on Linux truncates these to whole seconds (0.5 becomes "at once"),
        // so they are only a backstop; `start` enforces `timeout` itself.
        configuration.timeoutIntervalForRequest = timeout.rounded(.up) + 1
        configuration.timeoutIntervalForResource = timeout.rounded(.up) + 1
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpAdditionalHeaders = ["Accept": "application/json, application/problem+json"]
        session = URLSession(configuration: configuration)
    }

    /// `BlueLibraryClient(url: "http://127.0.0.1:8080")`; throws `.invalidRequest` for a URL
    /// that is not absolute http(s).
    public convenience init(url: String, timeout: Double = 10) throws(BlueLibraryClientError) {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme),
            parsed.host != nil
        else {
            throw .invalidRequest("'\(url)' is not an http:// or https:// URL with a host")
        }
        self.init(baseURL: parsed, timeout: timeout)
    }

    deinit { session.finishTasksAndInvalidate() }

    // MARK: - Albums

    /// `GET /albums`: one page. Throws on any status but 200.
    public func list(_ query: AlbumPageQuery = AlbumPageQuery()) throws(BlueLibraryClientError) -> AlbumPage {
        switch try list(query, ifNoneMatch: nil) {
        case let .modified(page): return page
        case .notModified: throw .decoding(status: 304, message: "304 Not Modified without If-None-Match")
        }
    }

    /// `GET /albums` with `If-None-Match`: `.notModified` when the server answers 304 (the page
    /// with that ETag is still current).
    public func list(_ query: AlbumPageQuery, ifNoneMatch etag: String?) throws(BlueLibraryClientError) -> Revalidated<AlbumPage> {
        let answer = try perform(listRequest(query, ifNoneMatch: etag))
        return try Self.decodePage(answer)
    }

    /// `GET /albums` without blocking: `completion` runs once, on the session's delegate queue,
    /// with the page, `.notModified`, or the error (`.cancelled` after `cancel()`).
    @discardableResult
    public func startList(
        _ query: AlbumPageQuery, ifNoneMatch etag: String? = nil,
        completion: @escaping @Sendable (Result<Revalidated<AlbumPage>, BlueLibraryClientError>) -> Void
    ) -> BlueLibraryRequest {
        let request: URLRequest
        do {
            request = try listRequest(query, ifNoneMatch: etag)
        } catch {
            completion(.failure(error))
            return BlueLibraryRequest()
        }
        return start(request) { result in
            completion(result.flatMap { answer in Result { () throws(BlueLibraryClientError) in try Self.decodePage(answer) } })
        }
    }

    /// `GET /albums/{id}`: the album with its current index.
    public func album(id: String) throws(BlueLibraryClientError) -> AlbumResource {
        try decode(perform(request("GET", ["albums", id])))
    }

    /// `GET /albums/at/{index}`.
    public func album(at index: Int) throws(BlueLibraryClientError) -> AlbumResource {
        try decode(perform(request("GET", ["albums", "at", String(index)])))
    }

    /// `POST /albums`: adds `input` at `index` (nil or past the end appends) and answers the new
    /// album with its index. It also becomes `client`'s current album. With an
    /// `idempotencyKey`, a retry adds nothing and answers the first result again.
    public func add(_ input: AlbumInput, at index: Int? = nil, client: String? = nil,
                    idempotencyKey: String? = nil) throws(BlueLibraryClientError) -> AlbumResource {
        var query: [(name: String, value: String)] = []
        if let index { query.append(("index", String(index))) }
        if let client { query.append(("client", client)) }
        var headers: [String: String] = [:]
        if let idempotencyKey { headers["Idempotency-Key"] = idempotencyKey }
        return try decode(perform(request("POST", ["albums"], query: query, json: input, headers: headers)))
    }

    /// `DELETE /albums/{id}`: answers the removed album with the index it had.
    public func delete(id: String) throws(BlueLibraryClientError) -> AlbumResource {
        try decode(perform(request("DELETE", ["albums", id])))
    }

    /// `DELETE /albums/at/{index}`: answers the removed album with the index it had.
    public func delete(at index: Int) throws(BlueLibraryClientError) -> AlbumResource {
        try decode(perform(request("DELETE", ["albums", "at", String(index)])))
    }

    /// `POST /albums/{id}/move`: moves the album to `index` (a current position) and answers it there.
    public func move(id: String, to index: Int) throws(BlueLibraryClientError) -> AlbumResource {
        try decode(perform(request("POST", ["albums", id, "move"], json: ["index": index])))
    }

    // MARK: - Undo and state

    /// `POST /undo`: undoes the last mutation; `.problem` with status 409 when there is nothing to undo.
    public func undo(client: String? = nil) throws(BlueLibraryClientError) -> UndoResultResource {
        try decode(perform(request("POST", ["undo"], query: client.map { [("client", $0)] } ?? [])))
    }

    /// `GET /undo`: the stack's depth and what the next undo would do.
    public func undoStatus() throws(BlueLibraryClientError) -> UndoStatusResource {
        try decode(perform(request("GET", ["undo"])))
    }

    /// `GET /state?client=`: the client's saved current album, resolved against the library now.
    public func state(client: String? = nil) throws(BlueLibraryClientError) -> SavedStateResource {
        try decode(perform(request("GET", ["state"], query: client.map { [("client", $0)] } ?? [])))
    }

    /// `PUT /state?client=`: saves the client's current album by position or by id.
    public func setState(_ target: StateTarget, client: String? = nil) throws(BlueLibraryClientError) -> SavedStateResource {
        let query = client.map { [(name: "client", value: $0)] } ?? []
        switch target {
        case let .index(index):
            return try decode(perform(request("PUT", ["state"], query: query, json: ["currentAlbumIndex": index])))
        case let .album(id):
            return try decode(perform(request("PUT", ["state"], query: query, json: ["albumID": id])))
        }
    }

    // MARK: - Requests

    func listRequest(_ query: AlbumPageQuery, ifNoneMatch etag: String?) throws(BlueLibraryClientError) -> URLRequest {
        try request("GET", ["albums"], query: query.queryItems, headers: etag.map { ["If-None-Match": $0] } ?? [:])
    }

    /// The URL of `path` (segments, each percent-encoded) under the base URL, with `query`.
    func url(_ path: [String], query: [(name: String, value: String)] = []) throws(BlueLibraryClientError) -> URL {
        var text = baseURL.absoluteString
        if let mark = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = String(text[..<mark]) }
        while text.hasSuffix("/") { text.removeLast() }
        for segment in path { text += "/" + Self.percentEncode(segment) }
        if !query.isEmpty {
            text += "?" + query.map { Self.percentEncode($0.name) + "=" + Self.percentEncode($0.value) }.joined(separator: "&")
        }
        guard let url = URL(string: text) else { throw .invalidRequest("cannot make a URL from \(text)") }
        return url
    }

    func request(_ method: String, _ path: [String], query: [(name: String, value: String)] = [],
                 headers: [String: String] = [:]) throws(BlueLibraryClientError) -> URLRequest {
        var request = URLRequest(url: try url(path, query: query), cachePolicy: .reloadIgnoringLocalCacheData,
                                 timeoutInterval: timeout.rounded(.up) + 1)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    func request(_ method: String, _ path: [String], query: [(name: String, value: String)] = [], json body: some Encodable,
                 headers: [String: String] = [:]) throws(BlueLibraryClientError) -> URLRequest {
        var request = try request(method, path, query: query, headers: headers)
        do {
            // Sorted keys: the same input is always the same bytes, which an Idempotency-Key
            // retry needs (the server compares bodies; unsorted key order varies run to run).
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            request.httpBody = try encoder.encode(body)
        } catch {
            throw .invalidRequest("cannot encode the request body: \(error)")
        }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        return request
    }

    /// Unreserved characters (RFC 3986) stay; everything else, `+` and `/` included, is %XX.
    static func percentEncode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    // MARK: - Transport

    /// A response as received: status, headers (names lower-cased) and body.
    struct Answer: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data

        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    /// Sends `request`; `completion` runs once on the session's delegate queue. After
    /// `timeout` seconds without an answer the request is cancelled and fails with `.timeout`.
    func start(_ request: URLRequest,
               completion: @escaping @Sendable (Result<Answer, BlueLibraryClientError>) -> Void) -> BlueLibraryRequest {
        let timeout = self.timeout
        let label = "\(request.httpMethod ?? "GET") \(request.url?.absoluteString ?? "?")"
        let handle = BlueLibraryRequest()
        let task = session.dataTask(with: request) { data, response, error in
            if let error {
                completion(.failure(handle.timedOut ? .timeout(seconds: timeout) : Self.transportError(error, timeout: timeout, label: label)))
                return
            }
            guard let http = response as? HTTPURLResponse else {
                completion(.failure(.transport(code: URLError.badServerResponse.rawValue, message: "\(label): no HTTP response")))
                return
            }
            var headers: [String: String] = [:]
            for (key, value) in http.allHeaderFields {
                if let key = key as? String, let value = value as? String { headers[key.lowercased()] = value }
            }
            completion(.success(Answer(status: http.statusCode, headers: headers, body: data ?? Data())))
        }
        handle.attach(task)
        task.resume()
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { handle.expire() }
        return handle
    }

    /// Sends `request` and waits for the answer.
    func perform(_ request: URLRequest) throws(BlueLibraryClientError) -> Answer {
        let box = ResultBox()
        let semaphore = DispatchSemaphore(value: 0)
        let handle = start(request) { result in
            box.set(result)
            semaphore.signal()
        }
        // URLSession enforces the timeout; this is only a backstop should it not.
        if semaphore.wait(timeout: .now() + timeout + 5) == .timedOut {
            handle.cancel()
            throw .timeout(seconds: timeout)
        }
        guard let result = box.get() else { throw .cancelled }
        return try result.get()
    }

    static func transportError(_ error: any Error, timeout: Double, label: String) -> BlueLibraryClientError {
        guard let urlError = error as? URLError else {
            return .transport(code: URLError.unknown.rawValue, message: "\(label): \(error.localizedDescription)")
        }
        switch urlError.code {
        case .cancelled: return .cancelled
        case .timedOut: return .timeout(seconds: timeout)
        case .cannotConnectToHost: return .transport(code: urlError.errorCode, message: "\(label): connection refused")
        case .cannotFindHost, .dnsLookupFailed: return .transport(code: urlError.errorCode, message: "\(label): unknown host")
        case .networkConnectionLost: return .transport(code: urlError.errorCode, message: "\(label): the connection was lost")
        case .notConnectedToInternet: return .transport(code: urlError.errorCode, message: "\(label): no network")
        default: return .transport(code: urlError.errorCode, message: "\(label): \(urlError.localizedDescription)")
        }
    }

    // MARK: - Decoding

    /// The problem document of an error answer, or one made up from its status and text.
    static func problem(_ answer: Answer) -> Problem {
        if let problem = try? JSONDecoder().decode(Problem.self, from: answer.body) { return problem }
        let text = String(decoding: answer.body.prefix(300), as: UTF8.self)
            .split(whereSeparator: \.isNewline).joined(separator: " ").trimmingCharacters(in: .whitespaces)
        let title = HTTPURLResponse.localizedString(forStatusCode: answer.status)
        return Problem(title: title, status: answer.status, detail: text.isEmpty ? "HTTP \(answer.status) \(title)" : text)
    }

    func decode<T: Decodable>(_ answer: Answer, as type: T.Type = T.self) throws(BlueLibraryClientError) -> T {
        try Self.decode(answer, as: type)
    }

    static func decode<T: Decodable>(_ answer: Answer, as type: T.Type = T.self) throws(BlueLibraryClientError) -> T {
        guard answer.status < 400 else { throw .problem(problem(answer)) }
        guard (200..<300).contains(answer.status) else {
            throw .decoding(status: answer.status, message: "expected a 2xx answer with a JSON body")
        }
        do {
            return try JSONDecoder().decode(T.self, from: answer.body)
        } catch {
            throw .decoding(status: answer.status, message: describe(error))
        }
    }

    static func decodePage(_ answer: Answer) throws(BlueLibraryClientError) -> Revalidated<AlbumPage> {
        if answer.status == 304 { return .notModified }
        let resource: AlbumPageResource = try decode(answer)
        let etag = answer.header("ETag")
        return .modified(AlbumPage(resource: resource, etag: etag, nextLink: answer.header("Link").flatMap(nextLink)))
    }

    /// The target of the `rel="next"` entry of a `Link` header.
    static func nextLink(_ header: String) -> URL? {
        for entry in header.split(separator: ",") {
            let parts = entry.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let target = parts.first, target.hasPrefix("<"), target.hasSuffix(">") else { continue }
            let isNext = parts.dropFirst().contains { parameter in
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard pair.count == 2, pair[0].lowercased() == "rel" else { return false }
                return pair[1].trimmingCharacters(in: ["\""]).split(separator: " ").contains { $0.lowercased() == "next" }
            }
            if isNext { return URL(string: String(target.dropFirst().dropLast())) }
        }
        return nil
    }

    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return String(describing: error) }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return keys.isEmpty ? "the body" : String(keys.drop { $0 == "." })
        }
        switch error {
        case let .keyNotFound(key, context): return "\(path(context)): missing \"\(key.stringValue)\""
        case let .typeMismatch(_, context), let .valueNotFound(_, context), let .dataCorrupted(context):
            return "\(path(context)): \(context.debugDescription)"
        @unknown default: return String(describing: error)
        }
    }
}

/// A request in flight; `cancel()` makes it complete with `.cancelled` (unless it already completed).
public final class BlueLibraryRequest: Sendable {
    private struct State {
        var task: URLSessionDataTask?
        var cancelled = false
        var timedOut = false
    }

    // URLSessionTask is thread-safe; the Mutex only orders attach, cancel and expire.
    private let state = Mutex<State>(State())

    init() {}

    public func cancel() {
        let task = state.withLock { state -> URLSessionDataTask? in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }

    var timedOut: Bool { state.withLock { $0.timedOut } }

    func attach(_ task: URLSessionDataTask) {
        let cancelled = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }

    /// The deadline passed: cancel the task if it is still running, and remember why.
    func expire() {
        let task = state.withLock { state -> URLSessionDataTask? in
            guard let task = state.task, task.state == .running, !state.cancelled else { return nil }
            state.timedOut = true
            return task
        }
        task?.cancel()
    }
}

/// The one result a synchronous call waits for.
private final class ResultBox: Sendable {
    private let value = Mutex<Result<BlueLibraryClient.Answer, BlueLibraryClientError>?>(nil)

    func set(_ result: Result<BlueLibraryClient.Answer, BlueLibraryClientError>) { value.withLock { $0 = result } }
    func get() -> Result<BlueLibraryClient.Answer, BlueLibraryClientError>? { value.withLock { $0 } }
}
