import CCurl
import Essentials
import Library
#if canImport(Glibc)
import Glibc
#endif

/// The state of one HTTP exchange (one redirect hop) as curl's callbacks see it: the status
/// line and headers, the body under its cap, and why the transfer was stopped if it was.
///
/// Confined to the thread running `curl_easy_perform`; callbacks reach it through the opaque
/// pointer curl hands back.
final class CurlTransfer {
    /// Bytes of a non-200 body read (and thrown away) before the transfer is cut.
    static let maxDiscardedBytes = 64 * 1024

    let host: String
    let policy: CoverAddressPolicy
    let maxBodyBytes: Int

    private(set) var status = 0
    private(set) var etag: String?
    private(set) var lastModified: String?
    private(set) var contentLength: Int?
    private(set) var body: [UInt8] = []
    /// Why a callback stopped the transfer; it explains curl's resulting error code.
    private(set) var failure: CoverError?
    /// An address the guard refused; explains a "could not connect".
    private(set) var refusedAddress: IPAddress?
    /// A non-200 body was longer than `maxDiscardedBytes`; the status is still the answer.
    private(set) var stoppedDiscarding = false
    private var discarded = 0

    init(host: String, policy: CoverAddressPolicy, maxBodyBytes: Int) {
        self.host = host
        self.policy = policy
        self.maxBodyBytes = maxBodyBytes
    }

    /// One header line (`HTTP/1.1 200 OK`, `Name: value`, or the empty line ending the head).
    /// Returns false to stop the transfer.
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) -> Bool {
        // Trim CR LF as bytes: in Swift "\r\n" is one Character, so hasSuffix("\n") misses it.
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        let text = String(decoding: line[..<end], as: UTF8.self)
        if text.hasPrefix("HTTP/") {
            // A new response (after a 1xx, or the first): forget the previous head.
            let parts = text.split(separator: " ", maxSplits: 2)
            status = parts.count >= 2 ? Int(parts[1]) ?? 0 : 0
            etag = nil
            lastModified = nil
            contentLength = nil
            return true
        }
        if text.isEmpty { return true }
        guard let colon = text.firstIndex(of: ":") else { return true }
        let name = text[..<colon].lowercased()
        let value = String(text[text.index(after: colon)...]).trimmingWhitespace()
        switch name {
        case "etag": etag = Self.headerSafe(value)
        case "last-modified": lastModified = Self.headerSafe(value)
        case "content-length":
            contentLength = Int(value)
            if status == 200, let contentLength, contentLength > maxBodyBytes {
                failure = Self.tooLarge(limit: maxBodyBytes, announced: contentLength)
                return false
            }
        default: break
        }
        return true
    }

    /// A piece of body. Returns false to stop the transfer.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard status == 200 else {
            discarded += bytes.count
            if discarded > Self.maxDiscardedBytes {
                stoppedDiscarding = true
                return false
            }
            return true
        }
        guard body.count + bytes.count <= maxBodyBytes else {
            failure = Self.tooLarge(limit: maxBodyBytes, announced: nil)
            return false
        }
        if body.isEmpty, let contentLength { body.reserveCapacity(min(contentLength, maxBodyBytes)) }
        body.append(contentsOf: bytes)
        return true
    }

    /// Whether the guard lets curl connect to `address`; a refusal is remembered.
    func mayConnect(to address: IPAddress?) -> Bool {
        guard let address else { return false }
        if policy.permits(address, host: host) { return true }
        refusedAddress = address
        return false
    }

    static func tooLarge(limit: Int, announced: Int?) -> CoverError {
        let what = announced.map { "announced \($0) bytes" } ?? "sent more than \(limit) bytes"
        return CoverError(.tooLarge, upstreamStatus: 200, detail: "The upstream \(what); covers are limited to \(limit) bytes.")
    }

    /// Validators go back out as request headers: drop any with control characters.
    private static func headerSafe(_ value: String) -> String? {
        guard !value.isEmpty, value.utf8.count <= 1024, value.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else {
            return nil
        }
        return value
    }
}

/// The C callbacks curl calls during `curl_easy_perform`; each finds its ``CurlTransfer``
/// through the opaque user pointer.
enum CurlCallbacks {
    static let header: bl_curl_data_callback = { pointer, size, count, userdata in
        guard let userdata else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
        let length = size * count
        let keepGoing = transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: pointer, count: length))
        return keepGoing ? length : 0
    }

    static let body: bl_curl_data_callback = { pointer, size, count, userdata in
        guard let userdata else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
        let length = size * count
        let keepGoing = transfer.receiveBody(UnsafeRawBufferPointer(start: pointer, count: length))
        return keepGoing ? length : 0
    }

    /// Called for every address curl is about to connect to, after resolution and on every
    /// hop: a refused address gets no socket, so no packet is ever sent to it.
    static let openSocket: bl_curl_opensocket_callback = { userdata, _, address in
        guard let userdata, let address, let socketAddress = bl_curl_sockaddr_address(address) else {
            return bl_curl_socket_bad()
        }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
        guard transfer.mayConnect(to: IPAddress(socketAddress: socketAddress)) else { return bl_curl_socket_bad() }
        let descriptor = socket(address.pointee.family, address.pointee.socktype, address.pointee.protocol)
        if descriptor >= 0 { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        return descriptor
    }

    /// Called once the connection is up (new or reused) and before the request is sent: the
    /// same guard on the address curl reports, as a second line of defence.
    static let prerequest: bl_curl_prereq_callback = { userdata, primaryIP, _, _, _ in
        guard let userdata, let primaryIP else { return 1 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
        return transfer.mayConnect(to: IPAddress(String(cString: primaryIP))) ? 0 : 1
    }
}
