import FuzzSupport
@_spi(Fuzzing) import HTTPServer

// The body decoder (chunked, or Content-Length), fed the way a connection feeds it: the bytes
// arrive in pieces, the buffer grows, and each call starts where the previous one stopped.
// Properties: it never traps; it never claims more bytes than it was given; the body never
// exceeds the limit; and the outcome (error, or the body and the bytes used) is the same
// whether the input arrives at once or in pieces.
// Byte 0: bit 0 = Content-Length framing (length from byte 1), bit 1 = a small limit (64);
// byte 2: the size of the pieces (0 = all at once).

private struct Outcome: Equatable {
    var body: [UInt8]
    var complete: Bool
    var used: Int
    var error: String?
}

private func decode(_ bytes: [UInt8], contentLength: Int?, limit: Int, piece: Int) -> Outcome {
    var buffer: [UInt8] = []
    var start = 0
    var offered = 0
    var decoder: HTTPFuzzingSeam.BodyDecoder
    do throws(HTTPParseError) {
        decoder = try HTTPFuzzingSeam.BodyDecoder(contentLength: contentLength, limit: limit)
    } catch {
        return Outcome(body: [], complete: false, used: 0, error: "\(error)")
    }
    repeat {
        let next = piece == 0 ? bytes.count : min(bytes.count, offered + piece)
        buffer.append(contentsOf: bytes[offered..<next])
        offered = next
        do throws(HTTPParseError) {
            let used = try decoder.consume(buffer, from: start)
            check(used >= 0 && used <= buffer.count - start, "used \(used) of \(buffer.count - start)")
            start += used
        } catch {
            return Outcome(body: [], complete: false, used: start, error: "\(error)")
        }
    } while !decoder.isComplete && offered < bytes.count
    let body = decoder.takeBody()
    check(body.count <= limit, "a body of \(body.count) bytes with a limit of \(limit)")
    return Outcome(body: body, complete: decoder.isComplete, used: start, error: nil)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let length = Int(input.byte())
    let piece = Int(input.byte() % 9)
    let bytes = input.rest()
    let contentLength = mode & 1 == 1 ? length : nil
    let limit = mode & 2 == 2 ? 64 : 1 << 20
    let whole = decode(bytes, contentLength: contentLength, limit: limit, piece: 0)
    if let contentLength, whole.error == nil {
        check(whole.complete == (bytes.count >= contentLength), "complete=\(whole.complete) with \(bytes.count) of \(contentLength)")
        if whole.complete { check(whole.body == Array(bytes[..<contentLength]), "the body is not the first \(contentLength) bytes") }
    }
    if piece > 0 {
        let pieces = decode(bytes, contentLength: contentLength, limit: limit, piece: piece)
        // An error may come earlier when the input is cut (a line is judged once it is complete),
        // but an input that decodes at once decodes the same in pieces, and vice versa.
        check(
            (whole.error == nil) == (pieces.error == nil) && (whole.error != nil || whole == pieces),
            "at once: \(whole); in pieces of \(piece): \(pieces)")
    }
    return 0
}
