import CCurl
import Synchronization

/// Owns one libcurl easy handle (`CURL *`): created in `init`, freed in `deinit`, options reset
/// between transfers so the handle keeps only its connection and DNS caches.
///
/// `@unchecked Sendable` because the handle is confined: one thread uses it at a time, and it
/// moves between threads only through ``CurlHandlePool``'s lock.
final class CurlHandle: @unchecked Sendable {
    /// A curl option the handle refused (unknown to this libcurl, bad value).
    struct SetupError: Error, CustomStringConvertible {
        let option: UInt32
        let code: UInt32
        var description: String {
            "libcurl refused option \(option): \(String(cString: curl_easy_strerror(CURLcode(code))))"
        }
    }

    /// `curl_global_init` must run once before any handle exists; a `static let` gives once-only,
    /// thread-safe initialisation.
    private static let globalInitResult: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    let raw: UnsafeMutableRawPointer

    init?() {
        guard Self.globalInitResult == CURLE_OK, let raw = curl_easy_init() else { return nil }
        self.raw = raw
    }

    deinit {
        curl_easy_cleanup(raw)
    }

    /// Back to default options; connections stay open for the next transfer.
    func reset() {
        curl_easy_reset(raw)
    }

    func set(_ option: CURLoption, _ value: Int) throws(SetupError) {
        try check(option, bl_curl_easy_setopt_long(raw, option, value))
    }

    func set(_ option: CURLoption, _ value: String) throws(SetupError) {
        // libcurl copies string options (since 7.17), so the C string need not outlive the call.
        let code = value.withCString { bl_curl_easy_setopt_string(raw, option, $0) }
        try check(option, code)
    }

    func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) throws(SetupError) {
        try check(option, bl_curl_easy_setopt_pointer(raw, option, pointer))
    }

    func set(_ option: CURLoption, largeValue: Int64) throws(SetupError) {
        try check(option, bl_curl_easy_setopt_off_t(raw, option, curl_off_t(largeValue)))
    }

    func set(_ option: CURLoption, callback: bl_curl_data_callback) throws(SetupError) {
        try check(option, bl_curl_easy_setopt_data_callback(raw, option, callback))
    }

    func setOpenSocket(_ callback: bl_curl_opensocket_callback) throws(SetupError) {
        try check(CURLOPT_OPENSOCKETFUNCTION, bl_curl_easy_setopt_opensocket_callback(raw, callback))
    }

    func setPrereq(_ callback: bl_curl_prereq_callback) throws(SetupError) {
        try check(CURLOPT_PREREQFUNCTION, bl_curl_easy_setopt_prereq_callback(raw, callback))
    }

    /// Runs the transfer configured so far; blocks the calling thread.
    func perform() -> CURLcode {
        curl_easy_perform(raw)
    }

    func infoLong(_ info: CURLINFO) -> Int? {
        var value = 0
        return bl_curl_easy_getinfo_long(raw, info, &value) == CURLE_OK ? value : nil
    }

    func infoString(_ info: CURLINFO) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard bl_curl_easy_getinfo_string(raw, info, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    private func check(_ option: CURLoption, _ code: CURLcode) throws(SetupError) {
        guard code == CURLE_OK else { throw SetupError(option: option.rawValue, code: code.rawValue) }
    }
}

/// A few idle easy handles kept for reuse (their connection caches make repeated fetches from
/// one upstream cheap). At most `capacity` are kept; more are created when all are busy, which
/// the fetch thread count bounds.
final class CurlHandlePool: Sendable {
    private let idle = Mutex<[CurlHandle]>([])
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Runs `body` with a handle taken from the pool (or a new one), then puts it back.
    /// Returns nil when libcurl cannot create a handle.
    func withHandle<T>(_ body: (CurlHandle) -> T) -> T? {
        let pooled = idle.withLock { $0.popLast() }
        guard let handle = pooled ?? CurlHandle() else { return nil }
        let result = body(handle)
        handle.reset()
        idle.withLock { handles in
            if handles.count < capacity { handles.append(handle) }
        }
        return result
    }
}
