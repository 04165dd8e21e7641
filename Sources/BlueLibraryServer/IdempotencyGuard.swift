import Essentials
import Foundation
import HTTPServer
import Library
import ServerRecords

/// `Idempotency-Key` for creating requests: a retry with the same key and body gets the first
/// response and changes nothing more (keys live 24 hours); the same key with a different body
/// is 422; a key whose first request is still running (or died midway) is 409.
///
/// A request that failed is released (its key may be used again) only when nothing was
/// changed for certain: never after the database became unavailable midway (the write may have
/// committed with its reply lost), and never when the first answer could not be recorded; such
/// a key answers 409 until it expires.
struct IdempotencyGuard: Sendable {
    let store: any IdempotencyStore
    let clock: @Sendable () -> Date
    var expiry: TimeInterval = 24 * 60 * 60

    static let replayedHeaders = ["Content-Type", "Location", "ETag"]

    /// - Parameter fingerprint: the request's ``Fingerprint`` when its body was streamed
    ///   (`request.body` is then empty).
    func run(_ request: HTTPRequest, fingerprint streamed: String? = nil, context: RequestContext,
             _ work: () throws -> HTTPResponse) throws -> HTTPResponse {
        guard let rawKey = request.headers["Idempotency-Key"] else { return try work() }
        let key = rawKey.trimmingASCIIWhitespace()
        guard !key.isEmpty, key.utf8.count <= 255, key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPError(.badRequest, detail: "Idempotency-Key must be 1 to 255 visible ASCII characters, such as a UUID.")
        }
        let scopedKey = "\(request.method.rawValue) \(request.path) \(key)"
        let fingerprint = streamed ?? Self.fingerprint(request)
        let claim: IdempotencyClaim
        do {
            claim = try store.begin(key: scopedKey, fingerprint: fingerprint, now: clock(), expiry: expiry)
        } catch {
            throw LibraryError.storage(UnderlyingError(error))
        }
        switch claim {
        case let .replay(stored):
            var response = HTTPResponse(status: HTTPStatus(code: stored.status), body: .bytes(stored.body))
            for pair in stored.headers where pair.count == 2 { response.headers.set(pair[0], pair[1]) }
            response.headers.set("Idempotent-Replayed", "true")
            return response
        case .mismatch:
            throw HTTPError(.unprocessableContent,
                            detail: "This Idempotency-Key was already used with a different request body; use a new key for a new request.",
                            type: "urn:bluelibrary:problem:idempotency-key-reused")
        case .inProgress:
            throw HTTPError(.conflict,
                            detail: "A request with this Idempotency-Key is still being processed, or was interrupted; check the result before retrying with a new key.",
                            type: "urn:bluelibrary:problem:idempotency-key-in-progress", headers: ["Retry-After": "1"])
        case .claimed:
            break
        }
        let response: HTTPResponse
        do {
            response = try work()
        } catch {
            if let dependency = DependencyUnavailable.cause(of: error) {
                // The database went away during the request: the write may have committed
                // (a COMMIT whose reply was lost), so the key is never released (a retry must
                // not write twice); it stays in progress until it expires.
                throw Self.ambiguousWriteError(dependency)
            }
            // Nothing was changed (facade mutations are all-or-nothing): the key may be reused.
            try? store.release(key: scopedKey)
            throw error
        }
        if case let .bytes(body) = response.body, response.status.code < 500 {
            let headers = Self.replayedHeaders.compactMap { name in response.headers[name].map { [name, $0] } }
            try? store.complete(key: scopedKey, response: IdempotentResponse(status: response.status.code, headers: headers, body: body))
        }
        return response
    }

    /// The 503 for a write with an Idempotency-Key that lost the database midway: whether it was
    /// saved is unknown, and its key stays claimed (a retry with it is 409 until the key expires).
    static func ambiguousWriteError(_ dependency: any UnavailableDependency) -> HTTPError {
        DependencyUnavailable.error(
            dependency,
            detail: "The database connection was lost while this change was being saved, so it may or may not "
                + "have been saved. Do not repeat it blindly: check whether it took effect (GET) once the database "
                + "is back. Its Idempotency-Key stays reserved (a repeat with it answers 409) until the key expires "
                + "24 hours after its first use; send a repeat with a new key.")
    }

    /// What makes two requests "the same": method, target and body.
    static func fingerprint(_ request: HTTPRequest) -> String {
        let head = Array("\(request.method.rawValue) \(request.target)\n".utf8)
        return String(ETag.strong(for: head + request.body).dropFirst().dropLast()) + "-" + String(request.body.count)
    }

    /// ``fingerprint(_:)`` of a body that arrives in pieces (the same value for the same body).
    struct Fingerprint {
        private var hash = FNV1a.offsetBasis
        private var count = 0

        init(_ request: HTTPRequest) {
            add(Array("\(request.method.rawValue) \(request.target)\n".utf8))
            count = 0
        }

        mutating func add(_ bytes: [UInt8]) {
            FNV1a.update(&hash, with: bytes)
            count += bytes.count
        }

        var value: String { FNV1a.hex(hash) + "-" + String(count) }
    }
}
