import FuzzSupport
@_spi(Fuzzing) import HTTPServer

// The request head parser, as a connection calls it: the whole input as received so far.
// Properties: it never traps; a head takes at least one byte and no more than there is;
// while it waits for more data the buffer is within the head limit (else it would grow
// without bound); the result does not depend on where in the buffer the head starts; a
// head found in the input is not found in any shorter prefix of it; parsing the input as it
// arrives in pieces, with the scan resuming where it stopped, answers every prefix as parsing
// that prefix from scratch does.
// The first byte picks the limits (the defaults, or small ones so the limits are reached) and
// the size of the pieces.

private func describe(_ result: Result<HTTPFuzzingSeam.Head?, HTTPParseError>) -> String {
    switch result {
    case let .success(head?):
        "head \(head.method) \(head.target) \(head.version) \(head.headers.fields) length=\(String(describing: head.contentLength)) "
            + "chunked=\(head.isChunked) continue=\(head.expectsContinue) keepAlive=\(head.wantsKeepAlive) consumed=\(head.consumed)"
    case .success(nil): "needMoreData"
    case let .failure(error): "error \(error)"
    }
}

private func parse(_ buffer: [UInt8], from start: Int, _ limits: HTTPServerLimits) -> Result<HTTPFuzzingSeam.Head?, HTTPParseError> {
    do throws(HTTPParseError) {
        return .success(try HTTPFuzzingSeam.parseHead(buffer, from: start, limits: limits))
    } catch {
        return .failure(error)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    var limits = HTTPServerLimits()
    let first = input.byte()
    let piece = 1 + Int(first >> 1) % 7
    if first & 1 == 1 {
        limits.maxRequestLineBytes = 40
        limits.maxHeadBytes = 200
        limits.maxHeaderCount = 4
    }
    let buffer = input.rest()
    let result = parse(buffer, from: 0, limits)
    switch result {
    case let .success(head?):
        check(head.consumed > 0 && head.consumed <= buffer.count, "consumed \(head.consumed) of \(buffer.count)")
        check(head.headers.count <= limits.maxHeaderCount, "\(head.headers.count) headers")
        check(!(head.isChunked && head.contentLength != nil), "chunked and a Content-Length")
        check((head.contentLength ?? 0) >= 0, "negative Content-Length")
        check(head.target.hasPrefix("/") || head.target == "*", "target \(head.target)")
        if head.consumed > 1 {
            let shorter = parse(Array(buffer[..<(head.consumed - 1)]), from: 0, limits)
            if case .success(_?) = shorter { check(false, "a prefix holds a head: \(describe(shorter))") }
        }
        // The next request in a pipeline starts where this one ended.
        _ = parse(buffer, from: head.consumed, limits)
    case .success(nil):
        check(buffer.count <= limits.maxHeadBytes, "waits for more with \(buffer.count) bytes buffered")
    case .failure:
        break
    }
    // Read by read, resuming the scan: each prefix gets the answer a fresh parse gives it.
    // (The first KiB only: a fresh parse of every prefix is quadratic.)
    var scanner = HTTPFuzzingSeam.HeadScanner(limits: limits)
    var end = 0
    while end < min(buffer.count, 1024) {
        end = min(buffer.count, 1024, end + piece)
        let prefix = Array(buffer[..<end])
        let resumed: Result<HTTPFuzzingSeam.Head?, HTTPParseError>
        do throws(HTTPParseError) {
            resumed = .success(try scanner.parse(prefix, from: 0))
        } catch {
            resumed = .failure(error)
        }
        let fresh = parse(prefix, from: 0, limits)
        check(describe(resumed) == describe(fresh), "\(describe(resumed)) resumed, \(describe(fresh)) fresh, at \(end) bytes")
        if case .success(nil) = resumed { continue }
        break
    }
    // The same bytes after others already consumed give the same answer.
    let shifted = parse([0x47, 0x45, 0x54] + buffer, from: 3, limits)
    check(describe(shifted) == describe(result), "\(describe(shifted)) at offset 3, \(describe(result)) at 0")
    return 0
}
