#if canImport(FoundationNetworking)
import CCurl
import FoundationNetworking
#endif
import Dispatch
import Foundation
import Synchronization

/// A typed client for the BlueLibrary HTTP API over `URLSession`.
///
/// **Two faces, one description per call.** Every typed call (`list`, `album`, `add`, `delete`,
/// `move`, `undo`, `state`, `setState`, ...) exists twice with the same name and arguments:
/// - `async` (the primary API): `try await client.album(at: 0)`. It never blocks a thread, and
///   cancelling the calling `Task` aborts the transfer at once (the URLSession task is
///   cancelled, so the connection is closed, not left running until the answer comes) and the
///   call throws `.cancelled`. A call made from an already cancelled task sends nothing.
/// - blocking (a thin layer, for command-line tools and other code without `async`): the same
///   call without `await` blocks the calling thread until the answer or the timeout. Never use
///   it from `async` code or from a thread the answer needs (the main thread of a UI app).
///
/// Both faces run the same `Call` (the request and how its answer is read, written once per
/// endpoint in the "Calls" section) over one callback transport, `start(_:handle:completion:)`,
/// the only place that talks to `URLSession`. The blocking face does not wait on the async one:
/// a thread blocked on a `Task` can starve Swift's small cooperative pool, while the transport's
/// completion runs on URLSession's own delegate queue, so blocking on it is always safe.
///
/// **Libraries and views.** Album calls take `in:` the list they act on: list-shaped calls
/// (`list`, `album(at:)`, `add`, `delete(at:)`) an `AlbumListSource`, a library or a composite
/// view; calls that exist only for a library (by album id, `move`, `undo`, `state`) a library
/// id. Left out, it is the default library, on the same unprefixed routes as before libraries
/// existed, so a call written without `in:` sends the same request it always did. One client
/// serves every library and view of its server. `libraries()`, `createView(_:)`, ... manage them
/// (`BlueLibraryClient+Catalog.swift`).
///
/// **A locked server.** A server with a token (write protection; with `access.protectReads`
/// reads too) wants `Authorization: Bearer <token>`. Give the client the token as a value
/// (`token:`) or as a `tokenProvider` closure, which the client calls for every request (so an
/// app can keep the token in its keychain and a rotated token is used from the next request on).
/// A refusal is `.unauthorized` (401: no token, or a wrong one) or `.tooManyRequests` (429: the
/// address is locked out after too many wrong tokens), each with the server's problem and its
/// `Retry-After`. The token is never logged nor put in an error; use an `https://` base URL
/// beyond loopback (the server speaks plain HTTP: end TLS at a proxy, as the README says).
///
/// Every call throws `BlueLibraryClientError`. The client is immutable and `Sendable`: one
/// instance serves any number of tasks and threads. Responses are never cached by `URLSession`;
/// revalidation is explicit (`ifNoneMatch:`).
public final class BlueLibraryClient: Sendable {
    public let baseURL: URL
    /// Seconds a request may take, end to end, before it fails with `.timeout`.
    public let timeout: Double
    #if canImport(FoundationNetworking)
    /// libcurl on a thread of the client's own (see `CurlTransport` for why not `URLSession`).
    let transport = CurlTransport()
    #else
    private let session: URLSession
    #endif
    /// Where the bearer token comes from: asked once per request; nil (or a nil or empty answer)
    /// sends no `Authorization`.
    private let tokenProvider: TokenProvider?
    /// The newest `BlueLibrary-Position` a response handed out, sent with every request: on a
    /// server that reads from replicas, this client never reads older than what it wrote or saw.
    let position = ReadPositionMemo()

    /// A closure that answers the bearer token for the next request (nil or "": send none).
    /// Called on the thread that makes the call, once per request, so keep it quick (a keychain
    /// read is fine). An error it throws fails the call with `.invalidRequest`, nothing sent.
    public typealias TokenProvider = @Sendable () throws -> String?

    /// - Parameters:
    ///   - baseURL: where the API lives, e.g. `http://127.0.0.1:8080` (a path prefix is kept).
    ///   - timeout: seconds per request (connect, send and receive together).
    ///   - token: the bearer token of a locked server, sent as `Authorization: Bearer <token>`
    ///     with every request (nil or empty: none).
    public convenience init(baseURL: URL, timeout: Double = 10, token: String? = nil) {
        var provider: TokenProvider?
        if let token, !token.isEmpty { provider = { @Sendable in token } }
        self.init(baseURL: baseURL, timeout: timeout, provider: provider)
    }

    /// A client that asks `tokenProvider` for the bearer token before every request, so a
    /// token read from a keychain, or replaced there, is the one sent.
    public convenience init(baseURL: URL, timeout: Double = 10, tokenProvider: @escaping TokenProvider) {
        self.init(baseURL: baseURL, timeout: timeout, provider: tokenProvider)
    }

    private init(baseURL: URL, timeout: Double, provider: TokenProvider?) {
        self.baseURL = baseURL
        self.timeout = timeout
        tokenProvider = provider
        #if !canImport(FoundationNetworking)
        let configuration = URLSessionConfiguration.ephemeral
        // FoundationNetworking on Linux truncates these to whole seconds (0.5 becomes "at once"),
        // so they are only a backstop; `start` enforces `timeout` itself.
        configuration.timeoutIntervalForRequest = timeout.rounded(.up) + 1
        configuration.timeoutIntervalForResource = timeout.rounded(.up) + 1
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpAdditionalHeaders = ["Accept": Self.defaultAccept]
        session = URLSession(configuration: configuration)
        #endif
    }

    /// The `Accept` of every request that sets none.
    static let defaultAccept = "application/json, application/problem+json"


    /// `BlueLibraryClient(url: "http://127.0.0.1:8080")`; throws `.invalidRequest` for a URL
    /// that is not absolute http(s).
    public convenience init(url: String, timeout: Double = 10, token: String? = nil) throws(BlueLibraryClientError) {
        self.init(baseURL: try Self.parse(url), timeout: timeout, token: token)
    }

    /// `BlueLibraryClient(url: "https://music.example.org", tokenProvider: { try keychain.token() })`.
    public convenience init(url: String, timeout: Double = 10, tokenProvider: @escaping TokenProvider) throws(BlueLibraryClientError) {
        self.init(baseURL: try Self.parse(url), timeout: timeout, tokenProvider: tokenProvider)
    }

    private static func parse(_ url: String) throws(BlueLibraryClientError) -> URL {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme),
            parsed.host != nil
        else {
            throw .invalidRequest("'\(url)' is not an http:// or https:// URL with a host")
        }
        return parsed
    }

    /// Whether the client has a token or a token provider (it may still answer nil).
    public var hasToken: Bool { tokenProvider != nil }

    #if canImport(FoundationNetworking)
    deinit { transport.shutdown() }
    #else
    deinit { session.finishTasksAndInvalidate() }
    #endif

    // MARK: - Albums

    /// `GET /albums` (or a library's or view's list): one page. Throws on any status but 200.
    public func list(_ query: AlbumPageQuery = AlbumPageQuery(), in source: AlbumListSource = .defaultLibrary)
        async throws(BlueLibraryClientError) -> AlbumPage
    {
        try await send(listCall(query, in: source))
    }

    /// `GET /albums` (or a library's or view's list) with `If-None-Match`: `.notModified` when
    /// the server answers 304 (the page with that ETag is still current).
    public func list(_ query: AlbumPageQuery, in source: AlbumListSource = .defaultLibrary,
                     ifNoneMatch etag: String?) async throws(BlueLibraryClientError) -> Revalidated<AlbumPage> {
        try await send(listCall(query, in: source, ifNoneMatch: etag))
    }

    /// `GET /albums/{id}`: the album with its current index in `library`.
    public func album(id: String, in library: String = AlbumListSource.defaultLibraryID) async throws(BlueLibraryClientError)
        -> AlbumResource
    {
        try await send(albumCall(id: id, in: library))
    }

    /// `GET /albums/at/{index}`; through a view, the album at that view position (with its `library`).
    public func album(at index: Int, in source: AlbumListSource = .defaultLibrary) async throws(BlueLibraryClientError)
        -> AlbumResource
    {
        try await send(albumCall(at: index, in: source))
    }

    /// `POST /albums`: adds `input` at `index` (nil or past the end appends) and answers the new
    /// album with its index. It also becomes `client`'s current album. With an
    /// `idempotencyKey`, a retry adds nothing and answers the first result again. Through a
    /// view, the album goes into the library that owns view position `index` (past the end:
    /// the last source), and undoing it is that library's undo.
    public func add(_ input: AlbumInput, at index: Int? = nil, in source: AlbumListSource = .defaultLibrary, client: String? = nil,
                    idempotencyKey: String? = nil) async throws(BlueLibraryClientError) -> AlbumResource {
        try await send(addCall(input, at: index, in: source, client: client, idempotencyKey: idempotencyKey))
    }

    /// `DELETE /albums/{id}`: answers the removed album with the index it had.
    public func delete(id: String, in library: String = AlbumListSource.defaultLibraryID) async throws(BlueLibraryClientError)
        -> AlbumResource
    {
        try await send(deleteCall(id: id, in: library))
    }

    /// `DELETE /albums/at/{index}`: answers the removed album with the index it had. Through a
    /// view, the album at that view position is deleted from its own library (undo it there).
    public func delete(at index: Int, in source: AlbumListSource = .defaultLibrary) async throws(BlueLibraryClientError)
        -> AlbumResource
    {
        try await send(deleteCall(at: index, in: source))
    }

    /// `POST /albums/{id}/move`: moves the album to `index` (a current position) in its own
    /// library and answers it there.
    public func move(id: String, to index: Int, in library: String = AlbumListSource.defaultLibraryID)
        async throws(BlueLibraryClientError) -> AlbumResource
    {
        try await send(moveCall(id: id, to: index, in: library))
    }

    /// `POST /albums/{id}/move` with `{"library": target, "index": index}`: moves the album from
    /// `library` (where it is now) into the library `target`, at `index` there (nil or past the
    /// end appends). Answers the album with `library` set to `target` and its index there.
    /// Undo it with `undo(in: library)`: it is on the source library's stack.
    public func move(id: String, from library: String = AlbumListSource.defaultLibraryID, toLibrary target: String,
                     at index: Int? = nil) async throws(BlueLibraryClientError) -> AlbumResource {
        try await send(moveCall(id: id, from: library, toLibrary: target, at: index))
    }

    // MARK: - Undo and state

    /// `POST /undo`: undoes the last mutation; `.problem` with status 409 when there is nothing to undo.
    public func undo(client: String? = nil, in library: String = AlbumListSource.defaultLibraryID)
        async throws(BlueLibraryClientError) -> UndoResultResource
    {
        try await send(undoCall(client: client, in: library))
    }

    /// `GET /undo`: the stack's depth and what the next undo would do.
    public func undoStatus(in library: String = AlbumListSource.defaultLibraryID) async throws(BlueLibraryClientError)
        -> UndoStatusResource
    {
        try await send(undoStatusCall(in: library))
    }

    /// `GET /state?client=`: the client's saved current album, resolved against the library now.
    public func state(client: String? = nil, in library: String = AlbumListSource.defaultLibraryID)
        async throws(BlueLibraryClientError) -> SavedStateResource
    {
        try await send(stateCall(client: client, in: library))
    }

    /// `PUT /state?client=`: saves the client's current album by position or by id.
    public func setState(_ target: StateTarget, client: String? = nil, in library: String = AlbumListSource.defaultLibraryID)
        async throws(BlueLibraryClientError) -> SavedStateResource
    {
        try await send(setStateCall(target, client: client, in: library))
    }

    // MARK: - Calls

    /// One API call: the request to send and how its answer is read. Both faces run it.
    struct Call<Value> {
        let request: URLRequest
        let read: (Answer) throws(BlueLibraryClientError) -> Value
    }

    /// A call whose 2xx answer is `Value` as JSON (any other status throws).
    func call<Value: Decodable>(_ method: String, _ path: [String], query: [(name: String, value: String)] = [],
                                        headers: [String: String] = [:]) throws(BlueLibraryClientError) -> Call<Value> {
        Call(request: try request(method, path, query: query, headers: headers), read: { answer throws(BlueLibraryClientError) in
            try Self.decode(answer)
        })
    }

    /// A call with a JSON body whose 2xx answer is `Value` as JSON.
    func call<Value: Decodable>(_ method: String, _ path: [String], query: [(name: String, value: String)] = [],
                                        json body: some Encodable, headers: [String: String] = [:])
        throws(BlueLibraryClientError) -> Call<Value>
    {
        Call(request: try request(method, path, query: query, json: body, headers: headers), read: { answer throws(BlueLibraryClientError) in
            try Self.decode(answer)
        })
    }

    func listCall(_ query: AlbumPageQuery, in source: AlbumListSource = .defaultLibrary) throws(BlueLibraryClientError)
        -> Call<AlbumPage>
    {
        Call(request: try listRequest(query, in: source, ifNoneMatch: nil), read: { answer throws(BlueLibraryClientError) in
            switch try Self.decodePage(answer) {
            case let .modified(page): return page
            case .notModified: throw .decoding(status: 304, message: "304 Not Modified without If-None-Match")
            }
        })
    }

    func listCall(_ query: AlbumPageQuery, in source: AlbumListSource = .defaultLibrary, ifNoneMatch etag: String?)
        throws(BlueLibraryClientError) -> Call<Revalidated<AlbumPage>>
    {
        Call(request: try listRequest(query, in: source, ifNoneMatch: etag), read: { answer throws(BlueLibraryClientError) in
            try Self.decodePage(answer)
        })
    }

    func albumCall(id: String, in library: String) throws(BlueLibraryClientError) -> Call<AlbumResource> {
        try call("GET", path(library, "albums", id))
    }

    func albumCall(at index: Int, in source: AlbumListSource) throws(BlueLibraryClientError) -> Call<AlbumResource> {
        try call("GET", source.pathPrefix + ["albums", "at", String(index)])
    }

    func addCall(_ input: AlbumInput, at index: Int?, in source: AlbumListSource, client: String?, idempotencyKey: String?)
        throws(BlueLibraryClientError) -> Call<AlbumResource>
    {
        var query: [(name: String, value: String)] = []
        if let index { query.append(("index", String(index))) }
        if let client { query.append(("client", client)) }
        var headers: [String: String] = [:]
        if let idempotencyKey { headers["Idempotency-Key"] = idempotencyKey }
        return try call("POST", source.pathPrefix + ["albums"], query: query, json: input, headers: headers)
    }

    func deleteCall(id: String, in library: String) throws(BlueLibraryClientError) -> Call<AlbumResource> {
        try call("DELETE", path(library, "albums", id))
    }

    func deleteCall(at index: Int, in source: AlbumListSource) throws(BlueLibraryClientError) -> Call<AlbumResource> {
        try call("DELETE", source.pathPrefix + ["albums", "at", String(index)])
    }

    func moveCall(id: String, to index: Int, in library: String) throws(BlueLibraryClientError) -> Call<AlbumResource> {
        try call("POST", path(library, "albums", id, "move"), json: ["index": index])
    }

    func moveCall(id: String, from library: String, toLibrary target: String, at index: Int?) throws(BlueLibraryClientError)
        -> Call<AlbumResource>
    {
        try call("POST", path(library, "albums", id, "move"), json: LibraryMoveBody(library: target, index: index))
    }

    func undoCall(client: String?, in library: String) throws(BlueLibraryClientError) -> Call<UndoResultResource> {
        try call("POST", path(library, "undo"), query: client.map { [("client", $0)] } ?? [])
    }

    func undoStatusCall(in library: String) throws(BlueLibraryClientError) -> Call<UndoStatusResource> {
        try call("GET", path(library, "undo"))
    }

    func stateCall(client: String?, in library: String) throws(BlueLibraryClientError) -> Call<SavedStateResource> {
        try call("GET", path(library, "state"), query: client.map { [("client", $0)] } ?? [])
    }

    func setStateCall(_ target: StateTarget, client: String?, in library: String) throws(BlueLibraryClientError)
        -> Call<SavedStateResource>
    {
        let query = client.map { [(name: "client", value: $0)] } ?? []
        switch target {
        case let .index(index): return try call("PUT", path(library, "state"), query: query, json: ["currentAlbumIndex": index])
        case let .album(id): return try call("PUT", path(library, "state"), query: query, json: ["albumID": id])
        }
    }

    /// The body of a move between libraries: `{"library": "jazz", "index": 0}` (`index` left out when nil).
    private struct LibraryMoveBody: Encodable {
        var library: String
        var index: Int?
    }

    /// `segments` under `library`'s prefix (none for the default library).
    func path(_ library: String, _ segments: String...) -> [String] {
        AlbumListSource.library(library).pathPrefix + segments
    }

    // MARK: - Requests

    func listRequest(_ query: AlbumPageQuery, in source: AlbumListSource = .defaultLibrary, ifNoneMatch etag: String?)
        throws(BlueLibraryClientError) -> URLRequest
    {
        try request("GET", source.pathPrefix + ["albums"], query: query.queryItems, headers: etag.map { ["If-None-Match": $0] } ?? [:])
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

    /// Sends `request`; `completion` runs once on the transport's thread (the session's
    /// delegate queue, or on Linux the `CurlTransport`'s thread). After
    /// `timeout` seconds without an answer the request is cancelled and fails with `.timeout`.
    /// A `handle` cancelled before or during the transfer completes it with `.cancelled` (and
    /// a handle cancelled before this call sends nothing).
    func start(_ request: URLRequest, handle: RequestHandle,
               completion: @escaping @Sendable (Result<Answer, BlueLibraryClientError>) -> Void) {
        var request = request
        do throws(BlueLibraryClientError) {
            if let token = try currentToken() { request.setValue("Bearer " + token, forHTTPHeaderField: "Authorization") }
        } catch {
            completion(.failure(error))
            return
        }
        if let position = position.text { request.setValue(position, forHTTPHeaderField: ReadPositionMemo.header) }
        let completion = { @Sendable [position] (result: Result<Answer, BlueLibraryClientError>) in
            if case let .success(answer) = result, let handed = answer.header(ReadPositionMemo.header) { position.note(handed) }
            completion(result)
        }
        let timeout = self.timeout
        let label = "\(request.httpMethod ?? "GET") \(request.url?.absoluteString ?? "?")"
        #if canImport(FoundationNetworking)
        let curlRequest = Self.curlRequest(request, timeoutSeconds: Int(timeout.rounded(.up)) + 1)
        let started = handle.resume { () -> any TransferTask in
            transport.start(curlRequest) { outcome in
                switch outcome {
                case let .answer(status, headers, body):
                    completion(.success(Answer(status: status, headers: headers, body: body)))
                case .cancelled:
                    completion(.failure(handle.timedOut ? .timeout(seconds: timeout) : .cancelled))
                case let .failed(code, message):
                    completion(.failure(handle.timedOut ? .timeout(seconds: timeout) : Self.curlError(code, message: message, timeout: timeout, label: label)))
                }
            }
        }
        guard started else {
            completion(.failure(.cancelled))
            return
        }
        #else
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
        guard handle.resume({ task.resume(); return task }) else {
            completion(.failure(.cancelled))
            return
        }
        #endif
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { handle.expire() }
    }

    /// The provider's token for the next request: nil for none; `.invalidRequest` when the
    /// provider fails or answers what cannot be a token (the message never repeats it).
    func currentToken() throws(BlueLibraryClientError) -> String? {
        guard let tokenProvider else { return nil }
        let token: String?
        do {
            token = try tokenProvider()
        } catch {
            throw .invalidRequest("the token provider failed: \(error)")
        }
        guard let token, !token.isEmpty else { return nil }
        // RFC 6750's token68 is narrower; a header value only must not break the head.
        guard token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw .invalidRequest("the token has a space, a control character or a non-ASCII character; a bearer token is printable ASCII")
        }
        return token
    }

    /// Runs `call` and reads its answer; cancelling the calling task aborts the transfer.
    func send<Value>(_ call: Call<Value>) async throws(BlueLibraryClientError) -> Value {
        try call.read(try await send(call.request))
    }

    /// Sends `request` and awaits the answer. The task's cancellation cancels the transfer.
    func send(_ request: URLRequest) async throws(BlueLibraryClientError) -> Answer {
        if Task.isCancelled { throw .cancelled }
        let handle = RequestHandle()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Answer, BlueLibraryClientError>, Never>) in
                start(request, handle: handle) { continuation.resume(returning: $0) }
            }
        } onCancel: {
            handle.cancel()
        }
        return try result.get()
    }

    /// Runs `call`, blocking the calling thread until the answer comes.
    func wait<Value>(_ call: Call<Value>) throws(BlueLibraryClientError) -> Value {
        try call.read(try wait(call.request))
    }

    /// Sends `request` and blocks until the answer comes.
    func wait(_ request: URLRequest) throws(BlueLibraryClientError) -> Answer {
        let box = ResultBox()
        let semaphore = DispatchSemaphore(value: 0)
        let handle = RequestHandle()
        start(request, handle: handle) { result in
            box.set(result)
            semaphore.signal()
        }
        // `start` enforces the timeout; this is only a backstop should it not.
        if semaphore.wait(timeout: .now() + timeout + 5) == .timedOut {
            handle.cancel()
            throw .timeout(seconds: timeout)
        }
        guard let result = box.get() else { throw .cancelled }
        return try result.get()
    }

    #if canImport(FoundationNetworking)
    /// `request` as `CurlTransport` sends it, with the session's `Accept` when it sets none.
    static func curlRequest(_ request: URLRequest, timeoutSeconds: Int) -> CurlTransport.Request {
        var headers = (request.allHTTPHeaderFields ?? [:]).map { (name: $0.key, value: $0.value) }
        if request.value(forHTTPHeaderField: "Accept") == nil { headers.append((name: "Accept", value: defaultAccept)) }
        return CurlTransport.Request(method: request.httpMethod ?? "GET", url: request.url?.absoluteString ?? "",
                                     headers: headers, body: request.httpBody, timeoutSeconds: timeoutSeconds)
    }

    /// The error of a transfer libcurl failed, in the terms `transportError` gives URLSession's.
    static func curlError(_ code: UInt32, message: String, timeout: Double, label: String) -> BlueLibraryClientError {
        switch CURLcode(code) {
        case CURLE_OPERATION_TIMEDOUT: return .timeout(seconds: timeout)
        case CURLE_COULDNT_CONNECT: return .transport(code: URLError.cannotConnectToHost.rawValue, message: "\(label): connection refused")
        case CURLE_COULDNT_RESOLVE_HOST: return .transport(code: URLError.cannotFindHost.rawValue, message: "\(label): unknown host")
        case CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE:
            return .transport(code: URLError.networkConnectionLost.rawValue, message: "\(label): the connection was lost")
        default: return .transport(code: URLError.unknown.rawValue, message: "\(label): \(message)")
        }
    }
    #endif

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

    /// The error of an answer with status 400 or more: `.unauthorized` for 401,
    /// `.tooManyRequests` for 429 (each with `Retry-After`), `.problem` for the rest.
    static func failure(_ answer: Answer) -> BlueLibraryClientError {
        let problem = problem(answer)
        switch answer.status {
        case 401: return .unauthorized(problem, retryAfter: answer.header("Retry-After").flatMap { retryAfterSeconds($0) })
        case 429: return .tooManyRequests(problem, retryAfter: answer.header("Retry-After").flatMap { retryAfterSeconds($0) })
        default: return .problem(problem)
        }
    }

    /// `Retry-After` in seconds: its delay-seconds, or the seconds until its HTTP date (0 when
    /// that passed); nil when it is neither.
    static func retryAfterSeconds(_ value: String, now: Date = Date()) -> Int? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            return Int(text) ?? Int.max  // more digits than Int holds: "a very long time"
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: text) else { return nil }
        return max(0, Int(date.timeIntervalSince(now).rounded(.up)))
    }

    static func decode<T: Decodable>(_ answer: Answer, as type: T.Type = T.self) throws(BlueLibraryClientError) -> T {
        guard answer.status < 400 else { throw failure(answer) }
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

/// One request's cancellation and deadline. `cancel()` makes the transfer complete with
/// `.cancelled` (unless it already completed); a handle cancelled before `start` attaches a task
/// keeps the request from being sent at all.
final class RequestHandle: Sendable {
    private struct State {
        var task: (any TransferTask)?
        var cancelled = false
        var timedOut = false
    }

    // The tasks are thread-safe; the Mutex only orders attach, cancel and expire.
    private let state = Mutex<State>(State())

    func cancel() {
        let task = state.withLock { state -> (any TransferTask)? in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }

    var timedOut: Bool { state.withLock { $0.timedOut } }

    /// Starts the task (`start` sends it) and remembers it for `cancel()`, both under the
    /// lock, so a `cancel()` always finds either a running task or none (a suspended task
    /// cancelled before its first resume is a case FoundationNetworking handles differently).
    /// False, and `start` is never called, when the handle was already cancelled.
    func resume(_ start: () -> any TransferTask) -> Bool {
        state.withLock { state -> Bool in
            guard !state.cancelled else { return false }
            state.task = start()
            return true
        }
    }

    /// The deadline passed: cancel the task if it is still running, and remember why.
    func expire() {
        let task = state.withLock { state -> (any TransferTask)? in
            guard let task = state.task, task.isRunning, !state.cancelled else { return nil }
            state.timedOut = true
            return task
        }
        task?.cancel()
    }
}

/// A request in flight, as `RequestHandle` cancels it.
protocol TransferTask: Sendable {
    var isRunning: Bool { get }
    func cancel()
}

extension URLSessionDataTask: TransferTask {
    var isRunning: Bool { state == .running }
}

#if canImport(FoundationNetworking)
extension CurlTransfer: TransferTask {}
#endif

/// The one result a synchronous call waits for.
private final class ResultBox: Sendable {
    private let value = Mutex<Result<BlueLibraryClient.Answer, BlueLibraryClientError>?>(nil)

    func set(_ result: Result<BlueLibraryClient.Answer, BlueLibraryClientError>) { value.withLock { $0 = result } }
    func get() -> Result<BlueLibraryClient.Answer, BlueLibraryClientError>? { value.withLock { $0 } }
}

/// The newest read position (`BlueLibrary-Position`, PostgreSQL's WAL position as `16/B374D848`)
/// the server handed this client; positions only move forward.
final class ReadPositionMemo: Sendable {
    static let header = "BlueLibrary-Position"
    private let newest = Mutex<(value: UInt64, text: String)?>(nil)

    /// What to send: nil until a response handed one out.
    var text: String? { newest.withLock { $0?.text } }

    /// Keeps `text` when it is a position newer than the one held.
    func note(_ text: String) {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let high = UInt32(parts[0], radix: 16), let low = UInt32(parts[1], radix: 16) else { return }
        let value = UInt64(high) << 32 | UInt64(low)
        newest.withLock { newest in
            if value > newest?.value ?? 0 { newest = (value, text) }
        }
    }
}
