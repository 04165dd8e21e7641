/// Collects a request body framed by Content-Length or chunked transfer coding
/// (RFC 9112 §6-§7), enforcing a size limit as bytes arrive.
struct HTTPBodyDecoder {
    enum State {
        case length(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case done
    }

    /// What the trailer section may add to the head: trailer fields count against the same
    /// limits as header fields (`maxHeadBytes`, `maxHeaderCount`).
    struct TrailerLimits: Sendable {
        var bytes: Int
        var fields: Int

        static let `default` = TrailerLimits(bytes: HTTPServerLimits().maxHeadBytes, fields: HTTPServerLimits().maxHeaderCount)
    }

    private(set) var state: State
    private(set) var body: [UInt8] = []
    /// Bytes already handed over by `takeBody()` (a streamed body is taken piece by piece).
    private var taken = 0
    let limit: Int
    /// Bytes and fields of the trailer section so far.
    private var trailerBytes = 0
    private var trailerFields = 0
    /// The most a declared Content-Length reserves before its bytes arrive: a client that
    /// announces a large body and sends nothing must not make the server allocate it.
    static let maximumUpfrontReservation = 64 * 1024

    let trailerLimits: TrailerLimits

    init(framing: HTTPRequestHead.BodyFraming, limit: Int, trailerLimits: TrailerLimits = .default) throws(HTTPParseError) {
        self.limit = limit
        self.trailerLimits = trailerLimits
        switch framing {
        case .none:
            state = .done
        case let .length(n):
            if n > limit { throw .bodyTooLarge(limit: limit) }
            body.reserveCapacity(min(n, Self.maximumUpfrontReservation))
            state = n == 0 ? .done : .length(remaining: n)
        case .chunked:
            state = .chunkSize
        }
    }

    var isComplete: Bool {
        if case .done = state { return true }
        return false
    }

    /// Consumes what it can from `buffer[start...]` and returns how many bytes it used.
    mutating func consume(_ buffer: [UInt8], from start: Int) throws(HTTPParseError) -> Int {
        var i = start
        let count = buffer.count
        loop: while i < count {
            switch state {
            case .done:
                break loop
            case let .length(remaining):
                let n = min(remaining, count - i)
                body.append(contentsOf: buffer[i..<(i + n)])
                i += n
                state = remaining == n ? .done : .length(remaining: remaining - n)
            case .chunkSize:
                guard let lineEnd = try lineEnd(buffer, from: i, maxLength: 1024) else {
                    if count - i > 1024 { throw .malformedChunk }
                    break loop
                }
                let size = try parseChunkSize(buffer[i..<lineEnd.content])
                i = lineEnd.next
                if size == 0 {
                    state = .trailers
                } else {
                    if taken + body.count + size > limit { throw .bodyTooLarge(limit: limit) }
                    state = .chunkData(remaining: size)
                }
            case let .chunkData(remaining):
                let n = min(remaining, count - i)
                body.append(contentsOf: buffer[i..<(i + n)])
                i += n
                state = remaining == n ? .chunkDataEnd : .chunkData(remaining: remaining - n)
            case .chunkDataEnd:
                // Chunk data ends in CRLF; a bare LF is refused (RFC 9112 §7.1).
                guard buffer[i] == 0x0D else { throw .malformedChunk }
                guard i + 1 < count else { break loop }
                guard buffer[i + 1] == 0x0A else { throw .malformedChunk }
                i += 2
                state = .chunkSize
            case .trailers:
                // Trailer fields are checked and dropped; an empty line ends the body. They
                // count against what the head left of the head limits.
                let budget = max(0, trailerLimits.bytes - trailerBytes)
                guard let lineEnd = try lineEnd(buffer, from: i, maxLength: budget) else {
                    if count - i > budget { throw .headTooLarge }
                    break loop
                }
                // The empty line that ends the section is the body's end, not a field: it
                // costs nothing (as the head's own end does not count against the head).
                let empty = lineEnd.content == i
                if !empty {
                    trailerBytes += lineEnd.next - i
                    if trailerBytes > trailerLimits.bytes { throw .headTooLarge }
                    trailerFields += 1
                    if trailerFields > trailerLimits.fields { throw .tooManyHeaders }
                    _ = try HTTPHeadParser.parseField(buffer, i..<lineEnd.content)
                }
                i = lineEnd.next
                if empty { state = .done }
            }
        }
        return i - start
    }

    /// Hands the collected body over.
    mutating func takeBody() -> [UInt8] {
        defer {
            taken += body.count
            body = []
        }
        return body
    }

    /// The end of the CRLF-terminated line at `start`: where its content ends and where the
    /// next line starts; nil if no LF came within `maxLength` + 2 bytes. A bare LF throws.
    private func lineEnd(_ buffer: [UInt8], from start: Int, maxLength: Int) throws(HTTPParseError) -> (content: Int, next: Int)? {
        var i = start
        let end = min(buffer.count, start + maxLength + 2)
        while i < end {
            if buffer[i] == 0x0A {
                guard i > start, buffer[i - 1] == 0x0D else { throw .malformedChunk }
                return (i - 1, i + 1)
            }
            i += 1
        }
        return nil
    }

    /// `chunk-size [ chunk-ext ]` (RFC 9112 §7.1.1):
    /// `chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )`, where a
    /// name is a token and a value a token or a quoted string. Extensions are checked and
    /// ignored; anything else after the size (`2 0`) is refused, since another parser may
    /// read the size differently.
    private func parseChunkSize(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> Int {
        var size = 0
        var i = line.startIndex
        let end = line.endIndex
        while i < end, let value = PercentDecoding.hexValue(line[i]) {
            if i - line.startIndex >= 15 { throw .malformedChunk }
            size = size << 4 | Int(value)
            i += 1
        }
        guard i > line.startIndex else { throw .malformedChunk }
        func skipWhitespace(_ i: inout Int) {
            while i < end, line[i] == 0x20 || line[i] == 0x09 { i += 1 }
        }
        func skipToken(_ i: inout Int) throws(HTTPParseError) {
            let start = i
            while i < end, HTTPHeadParser.isTokenByte(line[i]) { i += 1 }
            if i == start { throw .malformedChunk }
        }
        while true {
            skipWhitespace(&i)
            if i == end { return size }
            guard line[i] == UInt8(ascii: ";") else { throw .malformedChunk }
            i += 1
            skipWhitespace(&i)
            try skipToken(&i)
            skipWhitespace(&i)
            guard i < end, line[i] == UInt8(ascii: "=") else { continue }
            i += 1
            skipWhitespace(&i)
            guard i < end else { throw .malformedChunk }
            if line[i] == UInt8(ascii: "\"") {
                try skipQuotedString(line, &i)
            } else {
                try skipToken(&i)
            }
        }
    }

    /// `quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE` (RFC 9110 §5.6.4), from the
    /// opening quote at `i` to after the closing one.
    private func skipQuotedString(_ line: ArraySlice<UInt8>, _ i: inout Int) throws(HTTPParseError) {
        i += 1
        while i < line.endIndex {
            let byte = line[i]
            switch byte {
            case UInt8(ascii: "\""):
                i += 1
                return
            case UInt8(ascii: "\\"):
                // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
                guard i + 1 < line.endIndex else { throw .malformedChunk }
                let escaped = line[i + 1]
                guard escaped == 0x09 || escaped >= 0x20 && escaped != 0x7F else { throw .malformedChunk }
                i += 2
            case 0x09, 0x20...0x7E, 0x80...0xFF:
                i += 1
            default:
                throw .malformedChunk
            }
        }
        throw .malformedChunk
    }
}
