#if canImport(Glibc)
import Essentials
import CLinux
import Glibc
#endif

/// One client connection, confined to its event loop.
///
/// Requests are handled one at a time in arrival order: while a response is being produced,
/// pipelined requests wait in the input buffer, which keeps responses in order (RFC 9112 §9.3.2)
/// without a reorder queue. The socket is registered edge-triggered; `readable`/`writable`
/// remember what epoll last said so the connection reads only when it wants input.
final class Connection {
    /// Where the connection is. A plain enum checked on every step of `drive()`; what each
    /// phase needs is kept beside it (`pending`, `framing`, `stream`), so a check is an integer
    /// compare rather than a copy of a payload-carrying enum out of the object.
    enum Phase {
        /// Waiting for (the rest of) a request head.
        case awaitingHead
        /// Head read; collecting the body into `pending`.
        case readingBody
        /// The responder runs (on the worker pool, or inline just now); `framing` says how to
        /// frame its response.
        case processing
        /// A streaming body is open (`stream`, framed by `framing`).
        case streaming
        /// The last response is out and the write side shut down; what the client still
        /// sends is read and dropped until it closes or a bound is reached (lingering close).
        case lingering
        case closed
    }

    /// What the connection remembers about a request between head and response.
    struct PendingRequest {
        var head: HTTPRequestHead
        var resolution: Router.Resolution
        var decoder: HTTPBodyDecoder
        var receivedAt: ContinuousClock.Instant
    }

    /// How the response to the current request must be framed.
    struct ResponseFraming {
        var isHead: Bool
        var version: HTTPVersion
        var keepAlive: Bool
    }

    let id: UInt64
    let fd: Int32
    let peerAddress: String
    /// The loop owns its connections and closes them all before it ends, so it always
    /// outlives them: no reference counting on this hot reference.
    unowned(unsafe) let loop: EventLoop
    private var shared: ServerShared { loop.shared }

    private var phase: Phase = .awaitingHead
    /// The request whose body is being read (`.readingBody`).
    private var pending: PendingRequest?
    /// How the current response is framed (`.processing`, `.streaming`).
    private var framing = ResponseFraming(isHead: false, version: .http1_1, keepAlive: false)
    /// The open stream (`.streaming`).
    private var stream: (writer: HTTPStreamWriter, endsOnShutdown: Bool)?
    /// A request body still arriving while its responder runs (`.processing`, routes with
    /// `RouteOptions.streamsBody`); `requestBodyPaused` while the responder is a window behind.
    private var requestBody: (stream: HTTPRequestBodyStream, decoder: HTTPBodyDecoder)?
    private var requestBodyPaused = false
    private var input: [UInt8] = []
    private var inputStart = 0
    /// How far the head at `inputStart` has been scanned (`.awaitingHead`).
    private var headScan = HTTPHeadScan()
    private var output = OutputQueue()
    private var readable = false
    private var writable = true
    /// epoll reported a hang-up: read until recv says 0, even after a short read.
    private var hangUpReported = false
    private var peerClosed = false
    private var closeWhenFlushed = false
    /// The response being written answers an error after which the client may still be
    /// sending (a refused body): close by lingering.
    private var lingerOnClose = false
    /// What lingering may still discard.
    private var lingerBytesLeft = 0
    private var drainRequested = false
    /// True while `drive()` runs, so responses completed inside it do not re-enter it.
    private var driving = false
    /// What this connection used of its budget in the current turn (one `drive()`), and
    /// whether it already asked the loop for another turn.
    private var requestsThisTurn = 0
    private var bytesThisTurn = 0
    private var turnScheduled = false
    /// When the current wait (head, body, idle, write) times out, in MonotonicClock ns.
    private(set) var deadline: UInt64 = .max
    private var waitingSince: UInt64 = 0
    /// When the current body was first expected, and how many bytes have come since
    /// (MonotonicClock ns): the minimum body rate is measured from these.
    private var bodyStartedAt: UInt64 = 0
    private var bodyBytesReceived = 0

    init(id: UInt64, fd: Int32, peerAddress: String, loop: EventLoop) {
        self.id = id
        self.fd = fd
        self.peerAddress = peerAddress
        self.loop = loop
    }

    func start(now: UInt64) {
        deadline = now &+ shared.limits.idleTimeout.nanoseconds
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
    }

    /// Reads, parses and answers as far as possible, then flushes.
    private func drive() {
        if driving { return }
        if phase == .lingering {
            bytesThisTurn = 0
            discardInput()
            return
        }
        driving = true
        defer { driving = false }
        requestsThisTurn = 0
        bytesThisTurn = 0
        while true {
            if phase == .closed { return }
            if closeWhenFlushed { break }
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
                if phase == .closed { return }
                if output.queuedBytes > shared.limits.maxQueuedResponseBytes { break }
            }
            let progressed: Bool
            switch phase {
            case .awaitingHead, .readingBody:
                progressed = parseInput()
            case .streaming:
                // Nothing is expected from the client; read only to notice it leaving.
                inputStart = 0
                input.removeAll(keepingCapacity: true)
                progressed = false
            case .processing:
                progressed = requestBody != nil && !requestBodyPaused && pumpRequestBody()
            case .lingering, .closed:
                progressed = false
            }
            if progressed { continue }
            if phase == .processing && (requestBody == nil || requestBodyPaused) { break }
            guard readable, !peerClosed else { break }
            if !readSocket() { break }
        }
        flush()
    }

    /// Whether this turn's budget is spent while there is more input to work on.
    private var turnUsedUp: Bool {
        guard requestsThisTurn >= shared.limits.maxRequestsPerWakeup
            || bytesThisTurn >= shared.limits.maxReadBytesPerWakeup
        else { return false }
        switch phase {
        case .awaitingHead, .readingBody, .lingering, .streaming:
            return inputStart < input.count || (readable && !peerClosed)
        case .processing where requestBody != nil && !requestBodyPaused:
            // A streamed body being read: the same budget as a buffered one.
            return inputStart < input.count || (readable && !peerClosed)
        case .processing, .closed:
            return false
        }
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
            if phase == .readingBody || requestBody != nil {
                bodyBytesReceived += n
                armBodyDeadline()
            }
            return true
        }
        if n == 0 {
            peerClosed = true
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
        if let requestBody {
            requestBody.stream.fail(.truncated)
            self.requestBody = nil
        }
        switch phase {
        case .processing:
            // Half-closed clients still get their response.
            closeWhenFlushed = true
        case .awaitingHead where output.isEmpty:
            close()
        case .streaming, .readingBody, .awaitingHead, .lingering, .closed:
            if output.isEmpty { close() } else { closeWhenFlushed = true }
        }
    }

    /// Parses what is buffered. Returns true if it made progress.
    private func parseInput() -> Bool {
        do {
            switch phase {
            case .awaitingHead:
                guard inputStart < input.count else { return false }
                if waitingSince == 0 {
                    // The first byte of a head starts the head timeout.
                    waitingSince = loop.now
                    deadline = waitingSince &+ shared.limits.headTimeout.nanoseconds
                }
                switch try shared.headParser.parse(input, from: inputStart, scan: &headScan) {
                case .needMoreData:
                    return false
                case let .head(head, consumed):
                    inputStart += consumed
                    waitingSince = 0
                    try beginRequest(head, headBytes: consumed)
                    return true
                }
            case .readingBody:
                guard inputStart < input.count, var pending else { return false }
                // Take the pending request out first: with two references to the body
                // buffer, every append would copy the whole body (quadratic uploads).
                self.pending = nil
                phase = .processing
                framing = ResponseFraming(isHead: false, version: pending.head.version, keepAlive: false)
                let used = try pending.decoder.consume(input, from: inputStart)
                inputStart += used
                if pending.decoder.isComplete {
                    dispatch(pending)
                } else {
                    self.pending = pending
                    phase = .readingBody
                }
                return used > 0
            default:
                return false
            }
        } catch {
            answerParseError(error)
            return false
        }
    }

    private func beginRequest(_ head: HTTPRequestHead, headBytes: Int) throws(HTTPParseError) {
        let resolution = shared.router.resolve(method: head.method, path: Self.path(of: head.target))
        let limit = resolution.options.maxBodyBytes ?? shared.limits.maxBodyBytes
        // Trailer fields get what the head left of the head limits.
        let trailerLimits = HTTPBodyDecoder.TrailerLimits(
            bytes: max(0, shared.limits.maxHeadBytes - headBytes),
            fields: max(0, shared.limits.maxHeaderCount - head.headers.count))
        let decoder = try HTTPBodyDecoder(framing: head.framing, limit: limit, trailerLimits: trailerLimits)
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
        bodyStartedAt = loop.now
        bodyBytesReceived = 0
        if pending.resolution.options.streamsBody {
            beginStreamedBody(pending)
            return
        }
        armBodyDeadline()
        self.pending = pending
        phase = .readingBody
    }

    /// The body must make progress within `bodyTimeout` and, after the grace period, keep up
    /// `minBodyBytesPerSecond` on average: the deadline is whichever comes first, so the
    /// ordinary timeout sweep enforces both.
    private func armBodyDeadline() {
        let limits = shared.limits
        var next = loop.now &+ limits.bodyTimeout.nanoseconds
        if limits.minBodyBytesPerSecond > 0 {
            // When the bytes received so far stop being enough (Double: no overflow for
            // any body size or rate).
            let earned = Double(bodyBytesReceived) / Double(limits.minBodyBytesPerSecond) * 1e9
            let allowed = max(Double(limits.bodyRateGracePeriod.nanoseconds), earned)
            if allowed < Double(UInt64.max / 2) { next = min(next, bodyStartedAt &+ UInt64(allowed)) }
        }
        deadline = next
    }

    /// Starts the responder at once and feeds it the body as it arrives (`pumpRequestBody`).
    private func beginStreamedBody(_ pending: PendingRequest) {
        let stream = HTTPRequestBodyStream(loop: loop, connectionID: id, window: pending.resolution.options.bodyStreamWindow)
        requestBody = (stream, pending.decoder)
        requestBodyPaused = false
        dispatch(pending, bodyStream: stream)
        if requestBody != nil { armBodyDeadline() }
    }

    /// Decodes buffered body bytes into the responder's stream. Returns true if it made progress.
    private func pumpRequestBody() -> Bool {
        guard var body = requestBody, inputStart < input.count else { return false }
        requestBody = nil
        do {
            let used = try body.decoder.consume(input, from: inputStart)
            inputStart += used
            let chunk = body.decoder.takeBody()
            if !chunk.isEmpty, !body.stream.deliver(chunk) {
                // The responder is a window behind: stop reading until it resumes us.
                requestBodyPaused = true
                deadline = .max
            }
            if body.decoder.isComplete {
                body.stream.finish()
                requestBodyPaused = false
                deadline = .max
            } else {
                requestBody = body
            }
            return used > 0
        } catch {
            body.stream.fail(.rejected)
            requestBodyPaused = false
            answerParseError(error)
            return false
        }
    }

    /// The responder took enough of a paused body: read on.
    func resumeRequestBody() {
        guard requestBody != nil, requestBodyPaused else { return }
        requestBodyPaused = false
        // The server was the one not reading: the body's rate is measured afresh from here.
        bodyStartedAt = loop.now
        bodyBytesReceived = 0
        armBodyDeadline()
        drive()
    }

    // MARK: - Head check (before any body byte is read)

    /// Runs the server's head check; true when it answered or took the request off the loop.
    private func checkHead(_ pending: PendingRequest, _ headCheck: HeadCheck) -> Bool {
        let head = pending.head
        let request = HTTPRequest(method: head.method, target: head.target, version: head.version, headers: head.headers, body: [])
        let context = RequestContext(
            peerAddress: peerAddress, parameters: pending.resolution.parameters,
            routePattern: pending.resolution.pattern, host: head.headers["Host"], receivedAt: pending.receivedAt)
        switch headCheck.evaluate(request, context) {
        case .proceed:
            return false
        case let .refuse(response):
            refuseBeforeBody(response, version: head.version)
            return true
        case let .decideOnWorker(decide):
            // Nothing is read while the check runs (`.processing` parses no input).
            self.pending = pending
            phase = .processing
            deadline = .max
            let id = self.id
            shared.workers.submit { [loop] in
                let response = decide()
                loop.execute { loop in loop.connection(id)?.headChecked(response) }
            }
            return true
        }
    }

    /// The worker's head check is done (on the loop thread).
    private func headChecked(_ response: HTTPResponse?) {
        guard phase == .processing, let pending else { return }
        self.pending = nil
        if let response {
            refuseBeforeBody(response, version: pending.head.version)
            return
        }
        awaitBody(pending)
        if !driving { drive() }
    }

    /// Answers from the head and closes: the body is never read, so what follows in the
    /// input cannot be trusted as a next request.
    private func refuseBeforeBody(_ response: HTTPResponse, version: HTTPVersion) {
        var response = response
        response.headers.set("Connection", "close")
        input.removeAll()
        inputStart = 0
        headScan.reset()
        framing = ResponseFraming(isHead: false, version: version, keepAlive: false)
        phase = .processing
        lingerOnClose = true
        complete(response)
    }

    private static func path(of target: String) -> Substring {
        if let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) { return target[..<q] }
        return target[...]
    }

    // MARK: - Answering

    private func dispatch(_ pending: PendingRequest, bodyStream: HTTPRequestBodyStream? = nil) {
        requestsThisTurn += 1
        var pending = pending
        let head = pending.head
        var request = HTTPRequest(
            method: head.method, target: head.target, version: head.version, headers: head.headers,
            body: bodyStream == nil ? pending.decoder.takeBody() : [])
        request.bodyStream = bodyStream
        let context = RequestContext(
            peerAddress: peerAddress, parameters: pending.resolution.parameters,
            routePattern: pending.resolution.pattern, host: head.headers["Host"], receivedAt: pending.receivedAt)
        let framing = ResponseFraming(
            isHead: head.method == .head, version: head.version,
            keepAlive: head.wantsKeepAlive && !drainRequested && !shared.isDraining)
        let responder = pending.resolution.responder
        deadline = .max
        self.framing = framing
        phase = .processing
        // A streamed body is read by blocking calls: its responder never runs on the loop.
        if pending.resolution.options.execution == .inline, bodyStream == nil,
            let response = Self.respond(responder, request, context, shared, onWorker: false)
        {
            complete(response)
            return
        }
        let id = self.id
        let shared = self.shared
        var workerContext = context
        workerContext.isOnWorkerPool = true
        shared.workers.submit { [loop, workerContext, request] in
            let response = Self.respond(responder, request, workerContext, shared, onWorker: true)!
            loop.execute { loop in loop.connection(id)?.complete(response) }
        }
    }

    /// The responder's answer; nil when an inline responder asked for the worker pool.
    private static func respond(
        _ responder: any HTTPResponder, _ request: HTTPRequest, _ context: RequestContext, _ shared: ServerShared,
        onWorker: Bool
    ) -> HTTPResponse? {
        do {
            return try responder.respond(to: request, context: context)
        } catch is WorkerPoolRequired where !onWorker {
            return nil
        } catch {
            return shared.errorRenderer.render(error, request: request, context: context)
        }
    }

    /// Writes the response to the current request (on the loop thread).
    func complete(_ response: HTTPResponse) {
        guard phase == .processing else { return }
        var framing = self.framing
        if let requestBody {
            // Answered before the whole body arrived: the rest is not read, so the connection
            // cannot carry another request.
            requestBody.stream.abandon()
            self.requestBody = nil
            requestBodyPaused = false
            framing.keepAlive = false
        }
        if drainRequested || shared.isDraining { framing.keepAlive = false }
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
        let head = ResponseHeadEncoder(dateLine: loop.dateLine)
            .encode(response, version: framing.version, keepAlive: framing.keepAlive, sendsBody: sendsBody)
        output.append(head.bytes)
        switch response.body {
        case .empty:
            finishResponse(framing)
        case let .bytes(bytes):
            if sendsBody && !head.bodyIncluded { output.append(bytes) }
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
            self.stream = (writer, stream.endsOnShutdown)
            self.framing = framing
            phase = .streaming
            deadline = .max
            flush()
            stream.start(writer)
            if drainRequested && stream.endsOnShutdown { streamFinish() }
        }
    }

    private func finishResponse(_ framing: ResponseFraming) {
        phase = .awaitingHead
        if !framing.keepAlive { closeWhenFlushed = true }
        deadline = loop.now &+ (output.isEmpty ? shared.limits.idleTimeout : shared.limits.writeTimeout).nanoseconds
        if drainRequested && inputStart >= input.count { closeWhenFlushed = true }
        if !driving { drive() }
    }

    private func answerParseError(_ error: HTTPParseError) {
        var response = HTTPError(error.status, detail: error.detail).response()
        response.headers.set("Connection", "close")
        // After a framing error the rest of the input cannot be trusted.
        input.removeAll()
        inputStart = 0
        headScan.reset()
        framing = ResponseFraming(isHead: false, version: .http1_1, keepAlive: false)
        phase = .processing
        lingerOnClose = true
        shared.onParseError(error, peerAddress)
        complete(response)
    }

    // MARK: - Streams

    func streamWrite(_ bytes: [UInt8]) {
        guard phase == .streaming, let writer = stream?.writer, !bytes.isEmpty else { return }
        if output.queuedBytes > shared.limits.maxQueuedStreamBytes {
            // A reader this slow would hold memory forever: drop it.
            close()
            return
        }
        if framing.version == .http1_1 {
            output.append(Array((String(bytes.count, radix: 16) + "\r\n").utf8))
            output.append(bytes)
            output.append([0x0D, 0x0A])
        } else {
            output.append(bytes)
        }
        writer.didQueue(appended: bytes.count, queued: output.queuedBytes)
        flush()
    }

    func streamFinish() {
        guard phase == .streaming, let writer = stream?.writer else { return }
        if framing.version == .http1_1 { output.append(Array("0\r\n\r\n".utf8)) }
        closeWhenFlushed = true
        phase = .awaitingHead
        stream = nil
        writer.markClosed()
        flush()
    }

    // MARK: - Writing and closing

    private func flush() {
        if phase == .closed { return }
        if !output.isEmpty && writable {
            let (result, written) = output.flush(to: fd)
            switch result {
            case .done:
                break
            case .wouldBlock:
                writable = false
            case .failed:
                close()
                return
            }
            if written > 0, !output.isEmpty {
                deadline = loop.now &+ shared.limits.writeTimeout.nanoseconds
            }
            if written > 0, phase == .streaming, let writer = stream?.writer { writer.didFlush(queued: output.queuedBytes) }
        }
        if output.isEmpty {
            if closeWhenFlushed {
                if shouldLinger {
                    beginLingering()
                } else {
                    close()
                }
                return
            }
            if phase == .awaitingHead, deadline != .max, inputStart >= input.count {
                deadline = loop.now &+ shared.limits.idleTimeout.nanoseconds
            }
            switch phase {
            case .processing where requestBody != nil && !requestBodyPaused:
                // A streamed body is still owed by the client: its deadline stands.
                break
            case .streaming, .processing:
                // Nothing owed to this client right now (a handler is still working).
                deadline = .max
            default:
                break
            }
        } else if !writable, deadline == .max {
            // The client stopped reading: it has `writeTimeout` to make progress.
            deadline = loop.now &+ shared.limits.writeTimeout.nanoseconds
        }
    }

    // MARK: - Lingering close

    /// Whether closing now could reset a connection whose client is still sending: after an
    /// error response, or with input not yet read. (Not while the server shuts down.)
    private var shouldLinger: Bool {
        !peerClosed && !drainRequested && (lingerOnClose || inputStart < input.count || readable)
    }

    /// What nginx calls a lingering close: a close with unread input makes the kernel send a
    /// reset, which can destroy the response before the client has read it. So the write side
    /// is shut down (the client sees the response and then a FIN), and input is read and
    /// dropped until the client closes, `lingerMaxBytes` have been dropped or `lingerTimeout`
    /// has passed.
    private func beginLingering() {
        shutdown(fd, Int32(SHUT_WR))
        phase = .lingering
        closeWhenFlushed = false
        pending = nil
        input = []
        inputStart = 0
        headScan.reset()
        lingerBytesLeft = shared.limits.lingerMaxBytes
        deadline = loop.now &+ shared.limits.lingerTimeout.nanoseconds
        // Edge-triggered: bytes already waiting raise no new event, so read now.
        discardInput()
    }

    /// Reads and drops what the socket has, while lingering.
    private func discardInput() {
        while phase == .lingering {
            if bytesThisTurn >= shared.limits.maxReadBytesPerWakeup {
                yieldTurn()
                return
            }
            let n = recv(fd, loop.readScratch.baseAddress, loop.readScratch.count, 0)
            if n > 0 {
                bytesThisTurn += n
                lingerBytesLeft -= n
                if lingerBytesLeft <= 0 { close() }
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
        switch phase {
        case .awaitingHead where inputStart < input.count && output.isEmpty:
            // Half a head after the head timeout: a slowloris client. 408 and close.
            answerTimeout("The request head did not arrive in time.")
        case .readingBody where output.isEmpty:
            // A body that stalled, or trickles in below the minimum rate: the same.
            answerTimeout("The request body did not arrive in time, or arrived too slowly.")
        case .processing where requestBody != nil && output.isEmpty:
            // A streamed body (the responder is already reading it) that stalled or trickles
            // in below the minimum rate: the same; the responder's next read fails.
            answerTimeout("The request body did not arrive in time, or arrived too slowly.")
        case .readingBody:
            shared.onTimeout(peerAddress)
            close()
        default:
            close()
        }
    }

    private func answerTimeout(_ detail: String) {
        shared.onTimeout(peerAddress)
        var response = HTTPError(.requestTimeout, detail: detail).response()
        response.headers.set("Connection", "close")
        input.removeAll()
        inputStart = 0
        headScan.reset()
        pending = nil
        framing = ResponseFraming(isHead: false, version: .http1_1, keepAlive: false)
        phase = .processing
        lingerOnClose = true
        complete(response)
    }

    /// Server shutdown: close now if idle, otherwise after the current response.
    func drain() {
        drainRequested = true
        switch phase {
        case .awaitingHead where inputStart >= input.count:
            // Idle, or still writing its last response: close once that is out.
            if output.isEmpty { close() } else { closeWhenFlushed = true }
        case .streaming:
            if stream?.endsOnShutdown == true { streamFinish() }
        case .lingering:
            // Its response is out; the server is going away.
            close()
        default:
            break
        }
    }

    func close() {
        if phase == .closed { return }
        if phase == .streaming { stream?.writer.markClosed() }
        requestBody?.stream.fail(.truncated)
        requestBody = nil
        stream = nil
        pending = nil
        phase = .closed
        output.discard()
        Glibc.close(fd)
        deadline = .max
        loop.remove(self)
    }
}
