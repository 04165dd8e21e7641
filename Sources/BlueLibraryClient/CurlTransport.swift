#if canImport(FoundationNetworking)
import CCurl
import Foundation
import FoundationNetworking
import Synchronization

/// The client's transport on Linux: libcurl's multi interface on one thread of the client's
/// own, instead of FoundationNetworking's `URLSession`.
///
/// Why: FoundationNetworking drives libcurl through dispatch sources and keeps the socket's
/// write source armed once libcurl has asked for it (to see a connect finish, or to send a body
/// larger than the socket buffer) until the transfer ends. A socket is always writable, so
/// while the server works on a request the source fires again and again: the client burns
/// about one core (mostly system time, two threads waking each other) for as long as it waits.
/// A 2-second wait cost 2.4 s of CPU; a replica's sync of 10,000 changes spent half its CPU
/// that way, competing with the server for the same cores. Here the thread sleeps in
/// `curl_multi_poll` until a socket has something, a new request or a cancellation wakes it
/// (`curl_multi_wakeup`).
///
/// What a request gets is what `URLSession` gave: the session's `Accept` unless the request
/// sets one, automatic gzip/deflate decoding, redirects followed, no `Expect: 100-continue`,
/// connections kept alive between requests (the multi handle's cache), headers with lower-cased
/// names (repeated ones joined with ", "). Completions run on the transport's thread, once each.
final class CurlTransport: Sendable {
    /// One request as the transport sends it.
    struct Request: Sendable {
        var method: String
        var url: String
        var headers: [(name: String, value: String)]
        var body: Data?
        /// The backstop of the transfer as a whole (the client enforces its own deadline); 0
        /// for none (a stream).
        var timeoutSeconds: Int
        /// For a stream (an event stream never ends): a 200's body is handed here as it
        /// arrives (on the transport's thread) instead of kept; another status's body is kept
        /// (its first 64 KiB) for the error.
        var onBody: (@Sendable (Data) -> Void)? = nil
        /// For a stream: seconds without a byte after which the transfer fails with
        /// `CURLE_OPERATION_TIMEDOUT` (checked about every second).
        var idleTimeout: Double? = nil
    }

    /// How a transfer ended: the answer, or libcurl's error code and message.
    enum Outcome: Sendable {
        case answer(status: Int, headers: [String: String], body: Data)
        case failed(code: UInt32, message: String)
        case cancelled
    }

    private struct Queue {
        var pending: [Transfer] = []
        var cancelled: Set<ObjectIdentifier> = []
        var stopping = false
        var started = false
        /// The multi handle is cleaned up (the thread ended): nothing may wake it any more.
        var closed = false
    }

    private let queue = Mutex(Queue())
    /// The multi handle: created with the transport, used by its thread only (but for
    /// `curl_multi_wakeup`, which is safe from any thread), cleaned up when the thread ends.
    private let multi: Handle

    /// `curl_global_init` once before any handle (thread-safe through the `static let`).
    private static let globalInit: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    /// A libcurl handle passed between threads (only one uses it at a time).
    private struct Handle: @unchecked Sendable { let raw: UnsafeMutableRawPointer? }

    init() {
        multi = Handle(raw: Self.globalInit == CURLE_OK ? curl_multi_init() : nil)
    }

    /// Sends `request`; `completion` runs once, on the transport's thread. The returned
    /// transfer's `cancel()` ends it with `.cancelled` (if it has not ended yet).
    func start(_ request: Request, completion: @escaping @Sendable (Outcome) -> Void) -> Transfer {
        let transfer = Transfer(request: request, transport: self, completion: completion)
        let startThread = queue.withLock { queue -> Bool? in
            guard !queue.stopping, multi.raw != nil else { return nil }
            queue.pending.append(transfer)
            defer { queue.started = true }
            return !queue.started
        }
        switch startThread {
        case nil:
            // Not from inside the caller's call (it may hold a lock the completion takes).
            DispatchQueue.global().async {
                transfer.finish(.failed(code: CURLE_FAILED_INIT.rawValue, message: "the client's transport is closed"))
            }
        case true?:
            let thread = Thread { [self] in run() }
            thread.name = "BlueLibraryClient transport"
            thread.start()
        case false?:
            wake()
        }
        return transfer
    }

    /// Lets the running transfers end, then stops the thread (the client is gone).
    func shutdown() {
        let started = queue.withLock { queue -> Bool in
            queue.stopping = true
            return queue.started
        }
        if started {
            wake()
        } else {
            close()
        }
    }

    fileprivate func cancel(_ transfer: Transfer) {
        queue.withLock { _ = $0.cancelled.insert(ObjectIdentifier(transfer)) }
        wake()
    }

    /// Under the lock, so that it never reaches a handle `close()` has cleaned up.
    private func wake() {
        queue.withLock { queue in
            if !queue.closed, let raw = multi.raw { curl_multi_wakeup(raw) }
        }
    }

    private func close() {
        queue.withLock { queue in
            guard !queue.closed else { return }
            queue.closed = true
            if let raw = multi.raw { curl_multi_cleanup(raw) }
        }
    }

    // MARK: - The transport's thread

    private func run() {
        guard let multi = multi.raw else { return }
        var active: [UnsafeMutableRawPointer: Transfer] = [:]
        while true {
            let (added, cancelled, stopping) = queue.withLock { queue in
                defer {
                    queue.pending.removeAll()
                    queue.cancelled.removeAll()
                }
                return (queue.pending, queue.cancelled, queue.stopping)
            }
            for transfer in added {
                if cancelled.contains(ObjectIdentifier(transfer)) {
                    transfer.finish(.cancelled)
                } else if let easy = transfer.makeEasyHandle() {
                    curl_multi_add_handle(multi, easy)
                    active[easy] = transfer
                }
            }
            for (easy, transfer) in active where cancelled.contains(ObjectIdentifier(transfer)) {
                active[easy] = nil
                curl_multi_remove_handle(multi, easy)
                transfer.finish(.cancelled)
            }
            if stopping && active.isEmpty { break }
            let now = ContinuousClock.now
            for (easy, transfer) in active where transfer.isIdle(at: now) {
                active[easy] = nil
                curl_multi_remove_handle(multi, easy)
                transfer.complete(CURLE_OPERATION_TIMEDOUT)
            }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                let code = message.pointee.data.result
                curl_multi_remove_handle(multi, easy)
                active.removeValue(forKey: easy)?.complete(code)
            }
            curl_multi_poll(multi, nil, 0, 1000, nil)
        }
        close()
    }
}

/// One request through `CurlTransport`: its easy handle and what came back so far. The
/// transport's thread owns everything but `cancel()` and `isRunning`.
final class CurlTransfer: @unchecked Sendable {
    fileprivate let request: CurlTransport.Request
    private weak var transport: CurlTransport?
    private let completion: @Sendable (CurlTransport.Outcome) -> Void
    private let ended = Atomic<Bool>(false)

    private var easy: UnsafeMutableRawPointer?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var status = 0
    private var headers: [String: String] = [:]
    private var body = Data()
    /// When a byte last came (header or body), for a stream's idle timeout.
    private var lastActivity = ContinuousClock.now

    fileprivate init(request: CurlTransport.Request, transport: CurlTransport,
                     completion: @escaping @Sendable (CurlTransport.Outcome) -> Void) {
        self.request = request
        self.transport = transport
        self.completion = completion
    }

    deinit {
        if let easy { curl_easy_cleanup(easy) }
        if let headerList { curl_slist_free_all(headerList) }
    }

    /// Whether the transfer has not ended yet.
    var isRunning: Bool { !ended.load(ordering: .acquiring) }

    func cancel() {
        guard isRunning else { return }
        transport?.cancel(self)
    }

    /// Ends the transfer with `outcome`, once.
    fileprivate func finish(_ outcome: CurlTransport.Outcome) {
        guard ended.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        completion(outcome)
    }

    /// Whether a stream has gone `idleTimeout` without a byte.
    fileprivate func isIdle(at now: ContinuousClock.Instant) -> Bool {
        guard let idle = request.idleTimeout else { return false }
        return now - lastActivity > .milliseconds(Int64(idle * 1000))
    }

    fileprivate func complete(_ code: CURLcode) {
        if code == CURLE_OK {
            finish(.answer(status: status, headers: headers, body: body))
        } else {
            finish(.failed(code: code.rawValue, message: String(cString: curl_easy_strerror(code))))
        }
    }

    /// The easy handle for the request; nil (and the transfer failed) when libcurl refuses it.
    fileprivate func makeEasyHandle() -> UnsafeMutableRawPointer? {
        guard let easy = curl_easy_init() else {
            finish(.failed(code: CURLE_FAILED_INIT.rawValue, message: "libcurl could not make a handle"))
            return nil
        }
        self.easy = easy
        var code = CURLE_OK
        func set(_ option: CURLoption, _ value: Int) {
            if code == CURLE_OK { code = bl_curl_easy_setopt_long(easy, option, value) }
        }
        func set(_ option: CURLoption, _ value: String) {
            if code == CURLE_OK { code = value.withCString { bl_curl_easy_setopt_string(easy, option, $0) } }
        }
        func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) {
            if code == CURLE_OK { code = bl_curl_easy_setopt_pointer(easy, option, pointer) }
        }
        set(CURLOPT_URL, request.url)
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_FOLLOWLOCATION, 1)
        set(CURLOPT_MAXREDIRS, 16)
        set(CURLOPT_ACCEPT_ENCODING, "")
        set(CURLOPT_TIMEOUT_MS, request.timeoutSeconds * 1000)
        if let idle = request.idleTimeout { set(CURLOPT_CONNECTTIMEOUT_MS, Int(idle * 1000)) }
        switch request.method {
        case "GET": set(CURLOPT_HTTPGET, 1)
        case "HEAD": set(CURLOPT_NOBODY, 1)
        case "POST": break
        default: set(CURLOPT_CUSTOMREQUEST, request.method)
        }
        var names = Set<String>()
        var lines: [String] = []
        for (name, value) in request.headers {
            names.insert(name.lowercased())
            lines.append("\(name): \(value)")
        }
        if let body = request.body ?? (request.method == "POST" ? Data() : nil) {
            if code == CURLE_OK { code = bl_curl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)) }
            if code == CURLE_OK {
                code = body.withUnsafeBytes { bytes in
                    bl_curl_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)))
                }
            }
            // libcurl would add a form Content-Type to a body without one, and an
            // `Expect: 100-continue` (a wait for the server's go-ahead) to a large body.
            if !names.contains("content-type") { lines.append("Content-Type:") }
        }
        lines.append("Expect:")
        for line in lines { headerList = curl_slist_append(headerList, line) }
        set(CURLOPT_HTTPHEADER, pointer: headerList.map { UnsafeMutableRawPointer($0) })
        let me = Unmanaged.passUnretained(self).toOpaque()
        if code == CURLE_OK {
            code = bl_curl_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
                guard let data, let context else { return 0 }
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
                transfer.receive(UnsafeRawBufferPointer(start: UnsafeRawPointer(data), count: size * count))
                return size * count
            }
        }
        set(CURLOPT_WRITEDATA, pointer: me)
        if code == CURLE_OK {
            code = bl_curl_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
                guard let data, let context else { return 0 }
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
                transfer.header(UnsafeRawBufferPointer(start: UnsafeRawPointer(data), count: size * count))
                return size * count
            }
        }
        set(CURLOPT_HEADERDATA, pointer: me)
        guard code == CURLE_OK else {
            finish(.failed(code: code.rawValue, message: "libcurl refused an option: \(String(cString: curl_easy_strerror(code)))"))
            return nil
        }
        return easy
    }

    /// Body bytes: kept, or for a stream's 200 handed on as they come.
    private func receive(_ bytes: UnsafeRawBufferPointer) {
        lastActivity = .now
        guard let onBody = request.onBody else {
            body.append(contentsOf: bytes)
            return
        }
        if status == 200 {
            onBody(Data(bytes))
        } else if body.count < 64 * 1024 {
            body.append(contentsOf: bytes)
        }
    }

    /// One header line: a status line starts a new head (after a 1xx or a redirect).
    private func header(_ line: UnsafeRawBufferPointer) {
        lastActivity = .now
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        let text = String(decoding: line[..<end], as: UTF8.self)
        if text.hasPrefix("HTTP/") {
            let parts = text.split(separator: " ", maxSplits: 2)
            status = parts.count >= 2 ? Int(parts[1]) ?? 0 : 0
            headers = [:]
            body = Data()
            return
        }
        guard let colon = text.firstIndex(of: ":") else { return }
        let name = text[..<colon].lowercased()
        let value = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        if let earlier = headers[name] {
            headers[name] = earlier + ", " + value
        } else {
            headers[name] = value
        }
    }
}

extension CurlTransport {
    typealias Transfer = CurlTransfer
}
#endif
