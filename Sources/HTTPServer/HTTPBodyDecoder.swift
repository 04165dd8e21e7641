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

    private(set) var state: State
    private(set) var body: [UInt8] = []
    /// Bytes already handed over by `takeBody()` (a streamed body is taken piece by piece).
    private var taken = 0
    let limit: Int
    /// The most a declared Content-Length reserves before its bytes arrive: a client that
    /// announces a large body and sends nothing must not make the server allocate it.
    static let maximumUpfrontReservation = 64 * 1024

    init(framing: HTTPRequestHead.BodyFraming, limit: Int) throws(HTTPParseError) {
        self.limit = limit
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
                guard let lineEnd = lineEnd(buffer, from: i, maxLength: 1024) else {
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
                if buffer[i] == 0x0D {
                    guard i + 1 < count else { break loop }
                    guard buffer[i + 1] == 0x0A else { throw .malformedChunk }
                    i += 2
                } else if buffer[i] == 0x0A {
                    i += 1
                } else {
                    throw .malformedChunk
                }
                state = .chunkSize
            case .trailers:
                // Trailer fields are read and dropped; an empty line ends the body.
                guard let lineEnd = lineEnd(buffer, from: i, maxLength: 8192) else {
                    if count - i > 8192 { throw .malformedChunk }
                    break loop
                }
                let empty = lineEnd.content == i
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

    private func lineEnd(_ buffer: [UInt8], from start: Int, maxLength: Int) -> (content: Int, next: Int)? {
        var i = start
        let end = min(buffer.count, start + maxLength + 2)
        while i < end {
            if buffer[i] == 0x0A {
                return (i > start && buffer[i - 1] == 0x0D ? i - 1 : i, i + 1)
            }
            i += 1
        }
        return nil
    }

    private func parseChunkSize(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> Int {
        var size = 0
        var digits = 0
        for byte in line {
            if byte == UInt8(ascii: ";") || byte == 0x20 || byte == 0x09 { break }  // chunk extensions are ignored
            guard let value = PercentDecoding.hexValue(byte) else { throw .malformedChunk }
            digits += 1
            if digits > 15 { throw .malformedChunk }
            size = size << 4 | Int(value)
        }
        guard digits > 0 else { throw .malformedChunk }
        return size
    }
}
