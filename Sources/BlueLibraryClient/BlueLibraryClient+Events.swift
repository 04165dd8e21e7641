#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Synchronization

/// One Server-Sent Event as dispatched by the WHATWG event-stream rules: `event` is the event
/// type (`message` when the stream named none), `data` the data lines joined by `\n`, `id`
/// the stream's last event ID at the time (an `id:` line sets it for this and later events).
public struct ServerSentEvent: Sendable, Hashable {
    public var event: String
    public var data: String
    public var id: String

    public init(event: String = "message", data: String, id: String = "") {
        self.event = event
        self.data = data
        self.id = id
    }
}

/// The event-stream parser of the WHATWG HTML standard ("Interpreting an event stream"):
/// lines end in CRLF, LF or CR (a CR at the end of one chunk and an LF at the start of the next
/// are one line end); a line starting with `:` is a comment; `field: value` loses one space
/// after the colon; `data` lines accumulate, `event` names the type, `id` (without NUL) sets
/// the last event ID, `retry` (digits) the reconnection time; a blank line dispatches (nothing
/// when no data came). A leading byte-order mark is dropped. Fed bytes as they arrive.
struct ServerSentEventParser: Sendable {
    private var line: [UInt8] = []
    private var afterCR = false
    private var started = false
    private var data = ""
    private var hasData = false
    private var eventType = ""
    private(set) var lastEventID = ""
    /// The last `retry:` value, in milliseconds.
    private(set) var retry: Int?
    /// Comment lines seen (a heartbeat is one).
    private(set) var comments = 0

    mutating func feed(_ bytes: some Sequence<UInt8>) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if afterCR {
                afterCR = false
                if byte == 0x0A { continue }  // the LF of a CRLF
            }
            switch byte {
            case 0x0D:
                afterCR = true
                endLine(&events)
            case 0x0A:
                endLine(&events)
            default:
                line.append(byte)
            }
        }
        return events
    }

    private mutating func endLine(_ events: inout [ServerSentEvent]) {
        var bytes = line[...]
        line.removeAll(keepingCapacity: true)
        if !started {
            started = true
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        }
        if bytes.isEmpty {
            dispatch(&events)
            return
        }
        if bytes.first == UInt8(ascii: ":") {
            comments += 1
            return
        }
        let field: String
        var value: ArraySlice<UInt8> = []
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            value = bytes[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
            field = String(decoding: bytes[..<colon], as: UTF8.self)
        } else {
            field = String(decoding: bytes, as: UTF8.self)
        }
        let text = String(decoding: value, as: UTF8.self)
        switch field {
        case "event":
            eventType = text
        case "data":
            data += text + "\n"
            hasData = true
        case "id":
            if !value.contains(0) { lastEventID = text }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) { retry = Int(text) }
        default:
            break
        }
    }

    private mutating func dispatch(_ events: inout [ServerSentEvent]) {
        defer {
            data = ""
            hasData = false
            eventType = ""
        }
        guard hasData else { return }
        events.append(ServerSentEvent(event: eventType.isEmpty ? "message" : eventType, data: String(data.dropLast()), id: lastEventID))
    }
}

extension BlueLibraryClient {
    /// Seconds without a byte on an event stream before it counts as dropped (the server sends
    /// a heartbeat comment every 15 seconds).
    public static let eventStreamIdleTimeout: Double = 45

    /// `GET /events` (or a library's): the library's Server-Sent Events as they arrive, after
    /// the ones missed since `lastEventID` (the library version the caller is at; nil or
    /// empty: start live). The stream throws the server's refusal (`.unauthorized`,
    /// `.tooManyRequests`, `.problem` with its status) when it does not answer 200, a transport
    /// error (or `.timeout` after `eventStreamIdleTimeout` seconds of silence) when the
    /// connection breaks, and finishes when the server ends the stream. Ending the iteration
    /// (or cancelling the task that iterates) closes the connection.
    ///
    /// The body is read as bytes arrive: on Linux by the client's libcurl transport
    /// (`CurlTransport`, which also enforces the idle timeout; a `URLSession` stream kept a core
    /// busy there for as long as it was open), elsewhere through a `URLSessionDataDelegate` on a
    /// session of its own, whose `didReceive data` runs as bytes arrive.
    public func events(in library: String = AlbumListSource.defaultLibraryID, lastEventID: String? = nil)
        -> AsyncThrowingStream<ServerSentEvent, any Error>
    {
        events(in: library, lastEventID: lastEventID, idleTimeout: Self.eventStreamIdleTimeout)
    }

    func events(in library: String, lastEventID: String?, idleTimeout: Double) -> AsyncThrowingStream<ServerSentEvent, any Error> {
        eventStream(lastEventID: lastEventID, idleTimeout: idleTimeout) { () throws(BlueLibraryClientError) in
            try self.request("GET", self.path(library, "events"))
        }
    }

    /// `GET /events?library=a&library=b`: one stream over several libraries (at most 32), as
    /// `events(in:lastEventID:)` is over one. Each event's data names its `library`; its `id`
    /// is the stream's version vector, `a:12,b:3` (each library's newest version delivered).
    /// Give that vector back as `lastEventID` to resume: each library starts after its own
    /// version (what was missed first); a library it does not name starts with its own
    /// `library.outdated`. Events of different libraries are not ordered with each other.
    public func events(inLibraries libraries: [String], lastEventID: String? = nil) -> AsyncThrowingStream<ServerSentEvent, any Error> {
        eventStream(lastEventID: lastEventID, idleTimeout: Self.eventStreamIdleTimeout) { () throws(BlueLibraryClientError) in
            try self.request("GET", ["events"], query: libraries.map { (name: "library", value: $0) })
        }
    }

    private func eventStream(lastEventID: String?, idleTimeout: Double,
                             makeRequest: () throws(BlueLibraryClientError) -> URLRequest) -> AsyncThrowingStream<ServerSentEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream<ServerSentEvent, any Error>.makeStream(bufferingPolicy: .unbounded)
        var request: URLRequest
        do throws(BlueLibraryClientError) {
            request = try makeRequest()
            if let token = try currentToken() { request.setValue("Bearer " + token, forHTTPHeaderField: "Authorization") }
        } catch {
            continuation.finish(throwing: error)
            return stream
        }
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        if let lastEventID, !lastEventID.isEmpty { request.setValue(lastEventID, forHTTPHeaderField: "Last-Event-ID") }
        request.timeoutInterval = idleTimeout
        let label = "GET \(request.url?.absoluteString ?? "?")"

        #if canImport(FoundationNetworking)
        // On Linux through the client's libcurl transport (a `URLSession` stream kept a core
        // busy for as long as it was open; see `CurlTransport`).
        var curlRequest = Self.curlRequest(request, timeoutSeconds: 0)
        let parser = EventStreamParser()
        curlRequest.onBody = { data in
            for event in parser.feed(data) { continuation.yield(event) }
        }
        curlRequest.idleTimeout = idleTimeout
        let transfer = transport.start(curlRequest) { outcome in
            switch outcome {
            case let .answer(status, _, _) where status == 200:
                continuation.finish()
            case let .answer(status, headers, body):
                let answer = BlueLibraryClient.Answer(status: status, headers: headers, body: body)
                continuation.finish(throwing: status >= 400 ? BlueLibraryClient.failure(answer)
                    : BlueLibraryClientError.decoding(status: status, message: "\(label): expected 200 and an event stream"))
            case .cancelled:
                continuation.finish()
            case let .failed(code, message):
                continuation.finish(throwing: BlueLibraryClient.curlError(code, message: message, timeout: idleTimeout, label: label))
            }
        }
        continuation.onTermination = { _ in transfer.cancel() }
        return stream
        #else

        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = idleTimeout  // between bytes
        configuration.timeoutIntervalForResource = 60 * 60 * 24 * 365  // the stream stays open
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        let reader = EventStreamReader(continuation: continuation, label: label, timeout: idleTimeout)
        let session = URLSession(configuration: configuration, delegate: reader, delegateQueue: nil)
        let task = session.dataTask(with: request)
        continuation.onTermination = { _ in
            task.cancel()
            session.invalidateAndCancel()
        }
        task.resume()
        return stream
        #endif
    }
}

/// The parser of a stream's body as the transport's thread hands it over (one at a time).
private final class EventStreamParser: Sendable {
    private let parser = Mutex(ServerSentEventParser())

    func feed(_ data: Data) -> [ServerSentEvent] { parser.withLock { $0.feed(data) } }
}

/// The delegate of one event stream: parses the body as it arrives and yields each event; an
/// answer other than 200 is read whole and thrown as the client's error for it.
private final class EventStreamReader: NSObject, URLSessionDataDelegate, Sendable {
    private struct State {
        var parser = ServerSentEventParser()
        var status = 0
        var headers: [String: String] = [:]
        var errorBody = Data()
    }

    private let continuation: AsyncThrowingStream<ServerSentEvent, any Error>.Continuation
    private let label: String
    private let timeout: Double
    private let state = Mutex(State())

    init(continuation: AsyncThrowingStream<ServerSentEvent, any Error>.Continuation, label: String, timeout: Double) {
        self.continuation = continuation
        self.label = label
        self.timeout = timeout
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        if let http = response as? HTTPURLResponse {
            var headers: [String: String] = [:]
            for (key, value) in http.allHeaderFields {
                if let key = key as? String, let value = value as? String { headers[key.lowercased()] = value }
            }
            state.withLock {
                $0.status = http.statusCode
                $0.headers = headers
            }
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let events = state.withLock { state -> [ServerSentEvent] in
            guard state.status == 200 else {
                if state.errorBody.count < 64 * 1024 { state.errorBody.append(data) }
                return []
            }
            return state.parser.feed(data)
        }
        for event in events { continuation.yield(event) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (status, headers, body) = state.withLock { ($0.status, $0.headers, $0.errorBody) }
        if let error {
            continuation.finish(throwing: BlueLibraryClient.transportError(error, timeout: timeout, label: label))
        } else if status != 200 {
            let answer = BlueLibraryClient.Answer(status: status, headers: headers, body: body)
            continuation.finish(throwing: status >= 400 ? BlueLibraryClient.failure(answer)
                : BlueLibraryClientError.decoding(status: status, message: "\(label): expected 200 and an event stream"))
        } else {
            continuation.finish()
        }
        session.finishTasksAndInvalidate()
    }
}
