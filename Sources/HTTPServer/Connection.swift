import Essentials
#if canImport(Glibc)
import CLinux
import Glibc
#endif

/// One client connection, confined to its event loop: the I/O half of the pair. Its phase,
/// deadlines and what follows a timeout, a finished response, a blocked write, the client
/// leaving or a drain are decided by its ``ConnectionStateMachine`` (no syscalls, unit-tested
/// with a `ManualClock`); this class reads and writes the socket, parses, dispatches requests
/// and carries those decisions out.
///
/// Requests are handled one at a time in arrival order: while a response is being produced,
/// pipelined requests wait in the input buffer, which keeps responses in order (RFC 9112 §9.3.2)
/// without a reorder queue. The socket is registered edge-triggered; `readable`/`writable`
/// remember what epoll last said so the connection reads only when it wants input.
final class Connection {
    /// What the connection remembers about a request between head and response.
    struct PendingRequest {
        var head: HTTPRequestHead
        var resolution: Router.Resolution
        var decoder: HTTPBodyDecoder
        var receivedAt: ContinuousClock.Instant
    }

    /// The request a server's own answer is for (its head, without the body), when the head was
    /// read: what the middleware that wraps such answers sees.
    struct AnsweredHead {
        var head: HTTPRequestHead
        var resolution: Router.Resolution
        var receivedAt: ContinuousClock.Instant

        init(_ pending: PendingRequest) {
            self.init(head: pending.head, resolution: pending.resolution, receivedAt: pending.receivedAt)
        }

        init(head: HTTPRequestHead, resolution: Router.Resolution, receivedAt: ContinuousClock.Instant) {
            self.head = head
            self.resolution = resolution
            self.receivedAt = receivedAt
        }
    }

    /// How the response to the current request must be framed.
    struct ResponseFraming {
        var isHead: Bool
        var version: HTTPVersion
        var keepAlive: Bool
    }

    let id: UInt64
    let fd: Int32
    let peerAddress: IPAddress
    /// The loop owns its connections and closes them all before it ends, so it always
    /// outlives them: no reference counting on this hot reference.
    unowned(unsafe) let loop: EventLoop
    private var shared: ServerShared { loop.shared }

    // Every stored `var` below is touched only on the loop thread, by this connection's own
    // methods, none of which re-enters another while it modifies one: so they are declared
    // `@exclusivity(unchecked)`. The runtime's dynamic exclusivity check on each access was
    // ~27 calls and ~2,100 instructions per request (callgrind, a 304 of a cached page): about
    // 7% of the server's user-space work for it.

    /// The phase, its payloads and the deadline.
    @exclusivity(unchecked) private var state: ConnectionStateMachine
    @exclusivity(unchecked) private var input: [UInt8] = []
    @exclusivity(unchecked) private var inputStart = 0
    /// How far the head at `inputStart` has been scanned (while awaiting a head).
    @exclusivity(unchecked) private var headScan = HTTPHeadScan()
    @exclusivity(unchecked) private var output = OutputQueue()
    // What epoll last said about the socket (edge-triggered), and the bookkeeping of one turn:
    // I/O facts, not phases.
    @exclusivity(unchecked) private var readable = false
    @exclusivity(unchecked) private var writable = true
    /// The open stream bounds its unsent bytes (``HTTPStreamBody/boundsUnsentBytes``).
    @exclusivity(unchecked) private var boundsUnsent = false
    /// epoll reported a hang-up: read until recv says 0, even after a short read.
    @exclusivity(unchecked) private var hangUpReported = false
    /// True while `drive()` runs, so responses completed inside it do not re-enter it.
    @exclusivity(unchecked) private var driving = false
    /// What this connection used of its budget in the current turn (one `drive()`), and
    /// whether it already asked the loop for another turn.
    @exclusivity(unchecked) private var requestsThisTurn = 0
    @exclusivity(unchecked) private var bytesThisTurn = 0
    @exclusivity(unchecked) private var turnScheduled = false
    /// Handed to every request's context (``RequestContext/cancellation``) and set when the
    /// client leaves while a request is being answered or a response streams, or when the
    /// connection closes. Made with the first request; requests on one connection run one at a
    /// time, so one flag serves them all (once set, no further request is served).
    @exclusivity(unchecked) private var cancellation: CancellationFlag?

    /// When the current wait (head, body, idle, write, linger) times out, in clock ns.
    var deadline: UInt64 { state.deadline }

    init(id: UInt64, fd: Int32, peerAddress: IPAddress, loop: EventLoop) {
        self.id = id
        self.fd = fd
        self.peerAddress = peerAddress
        self.loop = loop
        state = ConnectionStateMachine(timeouts: loop.shared.connectionTimeouts, now: loop.now)
    }

    /// The connection is registered at `now`: it has `idleTimeout` to start a request.
    func start(now: UInt64) {
        state = ConnectionStateMachine(timeouts: shared.connectionTimeouts, now: now)
    }

    // MARK: - Events

    func handle(events: UInt32) {
        if events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue) != 0 { readable = true }
        if events & (EPOLLRDHUP.rawValue | EPOLLHUP.rawValue) != 0 { hangUpReported = true }
        if events & EPOLLOUT.rawValue != 0 { writable = true }
        if events & EPOLLERR.rawValue != 0 {
            close()
            return
        }
        drive()
        noticeClientLeaving()
    }

    /// The client hung up (or shut down its sending side) while its request is being answered
    /// on a worker: the work may stop, nobody will read its response. (While the connection
    /// waits for a responder nothing is read, so `peerLeft` would only come after it.)
    private func noticeClientLeaving() {
        guard hangUpReported, let cancellation, state.waitsForResponder || state.isStreaming else { return }
        cancellation.cancel()
    }

    /// Reads, parses and answers as far as possible, then flushes.
    private func drive() {
        if driving { return }
        if state.isLingering {
            bytesThisTurn = 0
            discardInput()
            return
        }
        driving = true
        defer { driving = false }
        requestsThisTurn = 0
        bytesThisTurn = 0
        while true {
            if state.isClosed { return }
            if state.closing != .no { break }
            if turnUsedUp {
                // Fairness: leave the rest for another turn, after the loop has served the
                // other ready connections (edge-triggered, so no new event would come).
                yieldTurn()
                break
            }
            if output.queuedBytes > shared.limits.maxQueuedResponseBytes {
                // Too much queued to take on another request: write some out first. If the
                // socket takes it all, carry on parsing; otherwise EPOLLOUT will drive again.
                flush()
                if state.isClosed { return }
                if output.queuedBytes > shared.limits.maxQueuedResponseBytes { break }
            }
            let progressed: Bool
            if state.parsesInput {
                progressed = parseInput()
            } else if state.isStreaming {
                // Nothing is expected from the client; read only to notice it leaving.
                inputStart = 0
                input.removeAll(keepingCapacity: true)
                progressed = false
            } else {
                progressed = state.readsStreamedBody && pumpRequestBody()
            }
            if progressed { continue }
            if state.waitsForResponder { break }
            guard readable, !state.peerClosed else { break }
            if !readSocket() { break }
        }
        flush()
    }

    /// Whether this turn's budget is spent while there is more input to work on.
    private var turnUsedUp: Bool {
        guard requestsThisTurn >= shared.limits.maxRequestsPerWakeup
            || bytesThisTurn >= shared.limits.maxReadBytesPerWakeup
        else { return false }
        return state.wantsMoreInput(hasBufferedInput: inputStart < input.count, socketReadable: readable)
    }

    /// Asks the loop for another turn once it has served the other ready connections.
    private func yieldTurn() {
        guard !turnScheduled else { return }
        turnScheduled = true
        loop.driveLater(self)
    }

    /// The loop gives this connection the turn it asked for.
    func resumeTurn() {
        turnScheduled = false
        drive()
    }

    /// Reads what the socket has. Returns true if new bytes arrived.
    ///
    /// A read shorter than the buffer emptied the socket (epoll(7): for stream sockets a short
    /// read shows the input is exhausted), so the connection waits for the next edge instead of
    /// spending a recv on EAGAIN: one recv per request, as nginx does. A hang-up reported with
    /// the data still needs the read that returns 0.
    private func readSocket() -> Bool {
        let n = recv(fd, loop.readScratch.baseAddress, loop.readScratch.count, 0)
        if n > 0 {
            bytesThisTurn += n
            if n < loop.readScratch.count && !hangUpReported { readable = false }
            if inputStart > 0 && inputStart == input.count {
                input.removeAll(keepingCapacity: true)
                inputStart = 0
            } else if inputStart >= 64 * 1024 && inputStart * 2 >= input.count {
                // A client that always leaves part of a request unread must not grow the
                // buffer forever: drop what was consumed.
                input.removeFirst(inputStart)
                inputStart = 0
            }
            input.append(contentsOf: UnsafeRawBufferPointer(rebasing: loop.readScratch[0..<n]))
            state.bodyBytesArrived(n, now: loop.now)
            return true
        }
        if n == 0 {
            readable = false
            peerLeft()
            return false
        }
        switch errno {
        case EAGAIN, EWOULDBLOCK:
            readable = false
        case EINTR:
            return true
        default:
            close()
        }
        return false
    }

    /// The client closed its side: finish what can be finished, otherwise close.
    private func peerLeft() {
        // Its responder's next read fails; the body's deadline stands.
        if let body = state.takeStreamedBody() { body.stream.fail(.truncated) }
        if state.peerLeft(outputEmpty: output.isEmpty) { close() }
    }

    /// Parses what is buffered. Returns true if it made progress.
    private func parseInput() -> Bool {
        guard inputStart < input.count else { return false }
        do {
            if case .awaitingHead = state.phase {
                // The first byte of a head starts the head timeout.
                state.headBytesArrived(now: loop.now)
                switch try shared.headParser.parse(input, from: inputStart, scan: &headScan) {
                case .needMoreData:
                    return false
                case let .head(head, consumed):
                    inputStart += consumed
                    beginRequest(head, headBytes: consumed)
                    return true
                }
            }
        } catch {
            // A head that cannot be parsed: no request to name.
            answerParseError(error, for: nil)
            return false
        }
        // Take the pending request out first: with two references to the body buffer,
        // every append would copy the whole body (quadratic uploads).
        guard case (var pending, let progress)? = state.takeBodyRequest() else { return false }
        do {
            let used = try pending.decoder.consume(input, from: inputStart)
            inputStart += used
            if pending.decoder.isComplete {
                dispatch(pending)
            } else {
                state.bodyIncomplete(pending, progress)
            }
            return used > 0
        } catch {
            answerParseError(error, for: AnsweredHead(pending))
            return false
        }
    }

    private func beginRequest(_ head: HTTPRequestHead, headBytes: Int) {
        let resolution = shared.router.resolve(method: head.method, path: Self.path(of: head.target))
        let limit = resolution.options.maxBodyBytes ?? shared.limits.maxBodyBytes
        // Trailer fields get what the head left of the head limits.
        let trailerLimits = HTTPBodyDecoder.TrailerLimits(
            bytes: max(0, shared.limits.maxHeadBytes - headBytes),
            fields: max(0, shared.limits.maxHeaderCount - head.headers.count))
        let decoder: HTTPBodyDecoder
        do {
            decoder = try HTTPBodyDecoder(framing: head.framing, limit: limit, trailerLimits: trailerLimits)
        } catch {
            // Refused from the head (a Content-Length over the limit: 413): the request is known.
            answerParseError(error, for: AnsweredHead(head: head, resolution: resolution, receivedAt: loop.wokeAt))
            return
        }
        let pending = PendingRequest(head: head, resolution: resolution, decoder: decoder, receivedAt: loop.wokeAt)
        if decoder.isComplete {
            dispatch(pending)
            return
        }
        if let headCheck = shared.headCheck, checkHead(pending, headCheck) { return }
        awaitBody(pending)
    }

    private func awaitBody(_ pending: PendingRequest) {
        if pending.head.expectsContinue {
            // The client waits for this before sending the body (RFC 9110 §10.1.1).
            output.append(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        if pending.resolution.options.streamsBody {
            beginStreamedBody(pending)
            return
        }
        state.awaitBody(pending, now: loop.now)
    }

    /// Starts the responder at once and feeds it the body as it arrives (`pumpRequestBody`).
    private func beginStreamedBody(_ pending: PendingRequest) {
        let stream = HTTPRequestBodyStream(loop: loop, connectionID: id, window: pending.resolution.options.bodyStreamWindow)
        let body = ConnectionStateMachine.StreamedBody(
            stream: stream, decoder: pending.decoder, progress: .init(startedAt: loop.now))
        // `dispatch` frames the response; the body's deadline runs from now.
        state.streamBody(
            body, framing: ResponseFraming(isHead: false, version: pending.head.version, keepAlive: false), now: loop.now)
        dispatch(pending, bodyStream: stream)
    }

    /// Decodes buffered body bytes into the responder's stream. Returns true if it made progress.
    private func pumpRequestBody() -> Bool {
        guard inputStart < input.count, var body = state.takeStreamedBody() else { return false }
        do {
            let used = try body.decoder.consume(input, from: inputStart)
            inputStart += used
            let chunk = body.decoder.takeBody()
            if !chunk.isEmpty, !body.stream.deliver(chunk) {
                // The responder is a window behind: stop reading until it resumes us.
                body.paused = true
            }
            if body.decoder.isComplete {
                body.stream.finish()
                state.putStreamedBody(nil)
            } else {
                state.putStreamedBody(body)
            }
            return used > 0
        } catch {
            // Its responder has the request (its middleware ran): it answers, with the server's
            // answer it reads from the stream (`rejection`), so that answer has the request id
            // and its access log line. Nothing more is read meanwhile, nothing times out; what
            // the client still sends is dropped by the lingering close after the answer.
            shared.onParseError(error, peerAddress)
            body.stream.fail(.rejected, answer: HTTPError(error.status, detail: error.detail))
            state.putStreamedBody(nil)
            return false
        }
    }

    /// The responder took enough of a paused body: read on.
    func resumeRequestBody() {
        guard state.resumeStreamedBody(now: loop.now) else { return }
        drive()
    }

    // MARK: - Head check (before any body byte is read)

    /// Runs the server's head check; true when it answered or took the request off the loop.
    private func checkHead(_ pending: PendingRequest, _ headCheck: HeadCheck) -> Bool {
        let head = pending.head
        let request = HTTPRequest(method: head.method, target: head.target, version: head.version, headers: head.headers, body: [])
        let context = RequestContext(
            peerAddress: peerAddress, parameters: pending.resolution.parameters,
            routePattern: pending.resolution.pattern, routeIndex: pending.resolution.routeIndex,
            host: head.headers["Host"], receivedAt: pending.receivedAt)
        switch headCheck.evaluate(request, context) {
        case .proceed:
            return false
        case let .refuse(response):
            refuseBeforeBody(response, for: pending)
            return true
        case let .decideOnWorker(decide):
            // Nothing is read while the check runs.
            state.checkHeadOnWorker(pending)
            let id = self.id
            let submitted = shared.submit(.workerPool, request) { [loop] in
                let response = decide()
                loop.execute { loop in loop.connection(id)?.headChecked(response) }
            }
            if !submitted { headChecked(shared.busyResponse(.workerPool, request: request, context: context)) }
            return true
        }
    }

    /// The worker's head check is done (on the loop thread).
    private func headChecked(_ response: HTTPResponse?) {
        guard let pending = state.takeCheckedHead() else { return }
        if let response {
            refuseBeforeBody(response, for: pending)
            return
        }
        awaitBody(pending)
        if !driving { drive() }
    }

    /// Answers from the head and closes: the body is never read, so what follows in the
    /// input cannot be trusted as a next request.
    private func refuseBeforeBody(_ response: HTTPResponse, for pending: PendingRequest) {
        answerWithError(response, version: pending.head.version, for: AnsweredHead(pending))
    }

    /// The server's own answer (a refused head, a parse error, a timeout), after which the
    /// connection closes by lingering: what is buffered cannot be trusted as a next request,
    /// and a body still streaming to a responder is abandoned.
    ///
    /// The answer passes through the router's middleware for server answers, so it carries the
    /// request id and is logged and counted like any other: `request` is the head when one was
    /// read. (A streamed body that fails is answered by its responder instead, whose middleware
    /// already runs: see `pumpRequestBody` and `timedOut`.)
    private func answerWithError(_ response: HTTPResponse, version: HTTPVersion, for request: AnsweredHead?) {
        var response = throughServerAnswerMiddleware(response, request)
        response.headers.set("Connection", "close")
        input.removeAll()
        inputStart = 0
        headScan.reset()
        if let body = state.takeStreamedBody() { body.stream.abandon() }
        state.answerWithError(version: version)
        complete(response)
    }

    /// `response` through ``Router/serverAnswer(_:to:context:)``, for `answered` or, when not
    /// even a head was read, for a placeholder request (`-` as method and target).
    private func throughServerAnswerMiddleware(_ response: HTTPResponse, _ answered: AnsweredHead?) -> HTTPResponse {
        guard let answered else {
            let request = HTTPRequest(method: HTTPMethod(rawValue: "-"), target: "-")
            return shared.router.serverAnswer(
                response, to: request, context: RequestContext(peerAddress: peerAddress, receivedAt: loop.wokeAt))
        }
        let head = answered.head
        let request = HTTPRequest(method: head.method, target: head.target, version: head.version, headers: head.headers, body: [])
        let context = RequestContext(
            peerAddress: peerAddress, parameters: answered.resolution.parameters,
            routePattern: answered.resolution.pattern, routeIndex: answered.resolution.routeIndex,
            host: head.headers["Host"], receivedAt: answered.receivedAt)
        return shared.router.serverAnswer(response, to: request, context: context)
    }

    private static func path(of target: String) -> Substring {
        if let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) { return target[..<q] }
        return target[...]
    }

    // MARK: - Answering

    private func dispatch(_ pending: PendingRequest, bodyStream: HTTPRequestBodyStream? = nil) {
        requestsThisTurn += 1
        loop.requestsDispatched.wrappingAdd(1, ordering: .relaxed)
        var pending = pending
        let head = pending.head
        var request = HTTPRequest(
            method: head.method, target: head.target, version: head.version, headers: head.headers,
            body: bodyStream == nil ? pending.decoder.takeBody() : [])
        request.bodyStream = bodyStream
        let cancellation = self.cancellation ?? CancellationFlag()
        self.cancellation = cancellation
        let context = RequestContext(
            peerAddress: peerAddress, parameters: pending.resolution.parameters,
            routePattern: pending.resolution.pattern, routeIndex: pending.resolution.routeIndex,
            host: head.headers["Host"], receivedAt: pending.receivedAt, cancellation: cancellation)
        let framing = ResponseFraming(
            isHead: head.method == .head, version: head.version,
            keepAlive: head.wantsKeepAlive && !state.drainRequested && !shared.isDraining)
        let responder = pending.resolution.responder
        state.dispatch(framing: framing)
        // Middleware and the route's fast path run here, once; what blocks comes back as
        // work for the pool (always so for streamed bodies, read by blocking calls).
        let work: @Sendable () throws -> HTTPResponse
        do {
            switch try responder.respond(to: request, context: context) {
            case let .response(response):
                complete(response)
                return
            case let .blocking(blocking):
                work = blocking
            }
        } catch {
            complete(shared.errorRenderer.render(error, request: request, context: context))
            return
        }
        let id = self.id
        let shared = self.shared
        let options = pending.resolution.options
        let submitted = shared.submit(options, request) { [loop, request, context] in
            let response: HTTPResponse
            do {
                response = try work()
            } catch {
                response = shared.errorRenderer.render(error, request: request, context: context)
            }
            loop.execute { loop in loop.connection(id)?.complete(response) }
        }
        guard !submitted else { return }
        // The pool's queue is full: 503 now. The work (with what its middleware would have done
        // with the response) is dropped unrun, so the answer goes through the middleware that
        // wraps the server's own answers (request id, access log, metrics).
        complete(shared.router.serverAnswer(
            shared.busyResponse(options, request: request, context: context), to: request, context: context))
    }

    /// Writes the response to the current request (on the loop thread).
    func complete(_ response: HTTPResponse) {
        guard case .processing(var framing, let requestBody) = state.phase else { return }
        if let requestBody {
            // Answered before the whole body arrived: the rest is not read, so the connection
            // cannot carry another request.
            _ = state.takeStreamedBody()
            requestBody.stream.abandon()
            framing.keepAlive = false
        }
        if state.drainRequested || shared.isDraining { framing.keepAlive = false }
        var response = response
        var fileFD: Int32 = -1
        if !framing.isHead && response.status.allowsBody, case let .file(file) = response.body {
            // Opened before the head is written: a file gone since the handler looked (a cover
            // evicted meanwhile) gets an error response instead of a head promising a length
            // that never comes. Once open, the file stays readable even if it is removed.
            fileFD = open(file.path, O_RDONLY | O_CLOEXEC)
            if fileFD < 0 {
                response = HTTPError(
                    .serviceUnavailable, detail: "The file for this response went away before it was sent; try again.",
                    headers: ["Retry-After": "1"]
                ).response()
            }
        }
        let sendsBody = !framing.isHead && response.status.allowsBody
        let encoder = ResponseHeadEncoder(dateLine: loop.dateLine)
        let bodyIncluded = output.append(recycling: &loop.recycledOutput) { buffer in
            encoder.encode(response, version: framing.version, keepAlive: framing.keepAlive, sendsBody: sendsBody, into: &buffer)
        }
        switch response.body {
        case .empty, .unknownLength:
            finishResponse(framing)
        case let .bytes(bytes):
            if sendsBody && !bodyIncluded { output.append(bytes) }
            finishResponse(framing)
        case let .file(file):
            if sendsBody { output.appendFile(fd: fileFD, offset: file.offset, length: file.length) }
            finishResponse(framing)
        case let .stream(stream):
            if framing.isHead || !response.status.allowsBody {
                finishResponse(framing)
                return
            }
            let writer = HTTPStreamWriter(loop: loop, connectionID: id)
            state.openStream(.init(writer: writer, endsOnShutdown: stream.endsOnShutdown), framing: framing)
            // (A later stream on this keep-alive connection decides for itself; the smaller
            // send buffer, once set, stays.)
            boundsUnsent = stream.boundsUnsentBytes
            if boundsUnsent, shared.limits.streamSendBufferBytes > 0 {
                _ = bl_set_send_buffer(fd, Int32(clamping: shared.limits.streamSendBufferBytes))
            }
            flush()
            stream.start(writer)
            if state.drainRequested && stream.endsOnShutdown { streamFinish() }
        }
    }

    private func finishResponse(_ framing: ResponseFraming) {
        state.responseFinished(
            keepAlive: framing.keepAlive, outputEmpty: output.isEmpty, inputDrained: inputStart >= input.count, now: loop.now)
        if !driving { drive() }
    }

    private func answerParseError(_ error: HTTPParseError, for request: AnsweredHead?) {
        // After a framing error the rest of the input cannot be trusted.
        shared.onParseError(error, peerAddress)
        answerWithError(HTTPError(error.status, detail: error.detail).response(), version: .http1_1, for: request)
    }

    // MARK: - Streams

    /// Queues a stream's bytes (framed once by the payload, shared with other connections)
    /// and sends what the socket takes: one `send` for everything queued.
    func streamWrite(_ payload: HTTPStreamPayload) {
        guard !payload.isEmpty, let framing = streamFramingAcceptingWrites() else { return }
        // Its own chunk: joined to a lagging stream's queue, the shared bytes would be copied.
        output.appendShared(framing.version == .http1_1 ? payload.chunk : payload.bytes)
        streamQueued(payload.count)
    }

    /// One stream's own bytes, framed here: small writes join the queue, large ones (an export's
    /// chunks) are queued as they are, without a copy.
    func streamWrite(_ bytes: [UInt8]) {
        guard !bytes.isEmpty, let framing = streamFramingAcceptingWrites() else { return }
        if framing.version == .http1_1 {
            output.append(Array((String(bytes.count, radix: 16) + "\r\n").utf8))
            output.append(bytes)
            output.append([0x0D, 0x0A])
        } else {
            output.append(bytes)
        }
        streamQueued(bytes.count)
    }

    /// The streaming response's framing, or nil when there is none or its reader is so slow
    /// that it is dropped (closed) instead of queueing more.
    private func streamFramingAcceptingWrites() -> ResponseFraming? {
        guard case let .streaming(framing, _) = state.phase else { return nil }
        if output.queuedBytes > shared.limits.maxQueuedStreamBytes {
            // A reader this slow would hold memory forever: drop it.
            close()
            return nil
        }
        if boundsUnsent, output.queuedBytes + max(0, Int(bl_socket_unsent_bytes(fd))) > shared.limits.maxUnsentStreamBytes {
            // Its bytes wait in our queue and in the kernel's: drop it with a reset, which
            // frees the kernel's queue now (a plain close would keep it for the peer).
            shared.countDroppedStream()
            _ = bl_set_abortive_close(fd)
            close()
            return nil
        }
        return framing
    }

    private func streamQueued(_ count: Int) {
        guard case let .streaming(_, stream) = state.phase else { return }
        stream.writer.didQueue(appended: count, queued: output.queuedBytes)
        flush()
    }

    func streamFinish() {
        guard let version = state.responseFraming?.version, let stream = state.streamFinished() else { return }
        if version == .http1_1 { output.append(Array("0\r\n\r\n".utf8)) }
        stream.writer.markClosed()
        flush()
    }

    // MARK: - Writing and closing

    private func flush() {
        if state.isClosed { return }
        if !output.isEmpty && writable {
            let (result, written) = output.flush(to: fd, recycling: &loop.recycledOutput)
            switch result {
            case .done:
                break
            case .wouldBlock:
                writable = false
            case .failed:
                close()
                return
            }
            if written > 0, !output.isEmpty { state.wroteSome(now: loop.now) }
            if written > 0, case let .streaming(_, stream) = state.phase { stream.writer.didFlush(queued: output.queuedBytes) }
        }
        if output.isEmpty {
            if state.closing != .no {
                if state.shouldLinger(hasUnreadInput: inputStart < input.count, socketReadable: readable) {
                    beginLingering()
                } else {
                    close()
                }
                return
            }
            state.outputDrained(inputDrained: inputStart >= input.count, now: loop.now)
        } else if !writable {
            // The client stopped reading: it has `writeTimeout` to make progress.
            state.writeBlocked(now: loop.now)
        }
    }

    // MARK: - Lingering close

    /// What nginx calls a lingering close: a close with unread input makes the kernel send a
    /// reset, which can destroy the response before the client has read it. So the write side
    /// is shut down (the client sees the response and then a FIN), and input is read and
    /// dropped until the client closes, `lingerMaxBytes` have been dropped or `lingerTimeout`
    /// has passed.
    private func beginLingering() {
        shutdown(fd, Int32(SHUT_WR))
        state.beginLingering(maxBytes: shared.limits.lingerMaxBytes, now: loop.now)
        input = []
        inputStart = 0
        headScan.reset()
        // Edge-triggered: bytes already waiting raise no new event, so read now.
        discardInput()
    }

    /// Reads and drops what the socket has, while lingering.
    private func discardInput() {
        while state.isLingering {
            if bytesThisTurn >= shared.limits.maxReadBytesPerWakeup {
                yieldTurn()
                return
            }
            let n = recv(fd, loop.readScratch.baseAddress, loop.readScratch.count, 0)
            if n > 0 {
                bytesThisTurn += n
                if state.discarded(n) { close() }
            } else if n == 0 {
                close()
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                readable = false
                return
            } else if errno != EINTR {
                close()
            }
        }
    }

    /// The current wait ran out: a slow or idle client is dropped, others are not affected.
    func timedOut() {
        switch state.timedOut(hasBufferedInput: inputStart < input.count, outputEmpty: output.isEmpty) {
        case let .requestTimeout(detail):
            shared.onTimeout(peerAddress)
            if let body = state.takeStreamedBody() {
                // A streamed body that stalled: its responder has the request and answers the
                // 408 (see `pumpRequestBody`).
                body.stream.fail(.rejected, answer: HTTPError(.requestTimeout, detail: detail))
                state.putStreamedBody(nil)
                return
            }
            answerWithError(HTTPError(.requestTimeout, detail: detail).response(), version: .http1_1,
                            for: state.pendingRequest.map(AnsweredHead.init))
        case let .close(counted):
            if counted { shared.onTimeout(peerAddress) }
            close()
        }
    }

    /// Server shutdown: close now if idle, otherwise after the current response.
    func drain() {
        switch state.drain(inputDrained: inputStart >= input.count, outputEmpty: output.isEmpty) {
        case .none: break
        case .close: close()
        case .finishStream: streamFinish()
        }
    }

    func close() {
        if state.isClosed { return }
        switch state.close() {
        case let .streaming(_, stream): stream.writer.markClosed()
        case let .processing(_, body?): body.stream.fail(.truncated)
        default: break
        }
        output.discard()
        Glibc.close(fd)
        cancellation?.cancel()
        loop.remove(self)
    }
}
