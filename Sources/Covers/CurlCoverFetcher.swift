import CCurl
import Essentials
import Library

/// Fetches covers with libcurl under ``CoverFetcherConfiguration``'s limits.
///
/// Redirects are followed here, not by curl (`CURLOPT_FOLLOWLOCATION` is off): each hop's URL
/// is parsed and checked like the first (http/https only, no user info), a URL seen before is a
/// loop, more than `maxRedirects` hops fail, and each hop's host is what the address guard's
/// host allow-list is matched against. One deadline covers all hops.
/// `CURLOPT_PROTOCOLS_STR` and `CURLOPT_REDIR_PROTOCOLS_STR` are still set to `http,https`.
///
/// Blocking: runs on the caller's thread (the service's fetch threads).
public final class CurlCoverFetcher: CoverFetching {
    private let configuration: CoverFetcherConfiguration
    private let handles: CurlHandlePool

    public init(configuration: CoverFetcherConfiguration, pooledHandles: Int = 8) {
        self.configuration = configuration
        handles = CurlHandlePool(capacity: max(1, pooledHandles))
    }

    public func fetch(_ request: UpstreamRequest) -> Result<UpstreamResponse, CoverError> {
        let clock = ContinuousClock()
        let totalTimeout = request.totalTimeout ?? configuration.totalTimeout
        let deadline = clock.now.advanced(by: totalTimeout)
        var url = request.url
        var seen: Set<String> = [url.description]
        var hops = 0
        while true {
            let remaining = clock.now.duration(to: deadline)
            guard remaining > .zero else { return .failure(timeoutError(totalTimeout)) }
            let outcome = handles.withHandle { handle in
                self.exchange(handle, url: url, request: request, remaining: remaining)
            }
            guard let outcome else {
                return .failure(CoverError(.transferFailed, detail: "libcurl could not create a handle."))
            }
            switch outcome {
            case .failure(let error):
                return .failure(error)
            case .success(.redirect(let location)):
                hops += 1
                let next: CoverURL
                do throws(CoverError) {
                    next = try CoverURL(location)
                } catch {
                    return .failure(CoverError(
                        .badRedirect, upstreamStatus: nil,
                        detail: "The upstream redirected to an unusable URL (\(error.detail))"))
                }
                guard hops <= configuration.maxRedirects else {
                    return .failure(CoverError(
                        .badRedirect, detail: "The upstream redirected more than \(configuration.maxRedirects) times."))
                }
                guard seen.insert(next.description).inserted else {
                    return .failure(CoverError(.badRedirect, detail: "The upstream's redirects loop."))
                }
                url = next
            case .success(.final(let response)):
                return .success(response)
            }
        }
    }

    private enum Exchange {
        case redirect(String)
        case final(UpstreamResponse)
    }

    /// One request/response on `handle`.
    private func exchange(
        _ handle: CurlHandle, url: CoverURL, request: UpstreamRequest, remaining: Duration
    ) -> Result<Exchange, CoverError> {
        let transfer = CurlTransfer(
            host: url.host, policy: request.addressPolicy ?? configuration.addressPolicy, maxBodyBytes: configuration.maxBodyBytes)
        var headers: UnsafeMutablePointer<curl_slist>?
        headers = curl_slist_append(headers, "Accept: image/png, image/jpeg, image/gif, image/webp")
        if let etag = request.etag { headers = curl_slist_append(headers, "If-None-Match: \(etag)") }
        if let lastModified = request.lastModified {
            headers = curl_slist_append(headers, "If-Modified-Since: \(lastModified)")
        }
        defer { curl_slist_free_all(headers) }

        let code: CURLcode
        do {
            let opaque = Unmanaged.passUnretained(transfer).toOpaque()
            let remainingMs = max(1, Int(remaining.milliseconds))
            try handle.set(CURLOPT_URL, url.description)
            try handle.set(CURLOPT_PROTOCOLS_STR, "http,https")
            try handle.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
            try handle.set(CURLOPT_FOLLOWLOCATION, 0)
            try handle.set(CURLOPT_NOSIGNAL, 1)
            // No proxy from the environment: the guard must see the real upstream's address.
            try handle.set(CURLOPT_PROXY, "")
            try handle.set(CURLOPT_CONNECTTIMEOUT_MS, min(remainingMs, max(1, Int(configuration.connectTimeout.milliseconds))))
            try handle.set(CURLOPT_TIMEOUT_MS, remainingMs)
            try handle.set(CURLOPT_USERAGENT, configuration.userAgent)
            try handle.set(CURLOPT_MAXFILESIZE_LARGE, largeValue: Int64(configuration.maxBodyBytes))
            try handle.set(CURLOPT_HTTPHEADER, pointer: headers.map { UnsafeMutableRawPointer($0) })
            try handle.set(CURLOPT_HEADERFUNCTION, callback: CurlCallbacks.header)
            try handle.set(CURLOPT_HEADERDATA, pointer: opaque)
            try handle.set(CURLOPT_WRITEFUNCTION, callback: CurlCallbacks.body)
            try handle.set(CURLOPT_WRITEDATA, pointer: opaque)
            try handle.setOpenSocket(CurlCallbacks.openSocket)
            try handle.set(CURLOPT_OPENSOCKETDATA, pointer: opaque)
            try handle.setPrereq(CurlCallbacks.prerequest)
            try handle.set(CURLOPT_PREREQDATA, pointer: opaque)
            code = withExtendedLifetime(transfer) { handle.perform() }
        } catch {
            return .failure(CoverError(.transferFailed, detail: "The fetch could not be set up: \(error)."))
        }

        if code != CURLE_OK, !(code == CURLE_WRITE_ERROR && transfer.stoppedDiscarding) {
            return .failure(error(for: code, transfer: transfer, url: url, request: request))
        }
        let status = transfer.status
        switch status {
        case 200:
            guard let format = ImageSignature.sniff(transfer.body) else {
                let what = transfer.body.isEmpty ? "an empty body" : "bytes that are not a PNG, JPEG, GIF or WebP image"
                return .failure(CoverError(.notAnImage, upstreamStatus: 200, detail: "The upstream sent \(what)."))
            }
            return .success(.final(.image(
                bytes: transfer.body, format: format, etag: transfer.etag, lastModified: transfer.lastModified)))
        case 304 where request.etag != nil || request.lastModified != nil:
            return .success(.final(.notModified(etag: transfer.etag, lastModified: transfer.lastModified)))
        case 301, 302, 303, 307, 308:
            guard let location = handle.infoString(CURLINFO_REDIRECT_URL) else {
                return .failure(CoverError(
                    .upstreamStatus, upstreamStatus: status,
                    detail: "The upstream answered \(status) without a usable Location."))
            }
            return .success(.redirect(location))
        default:
            return .failure(CoverError(
                .upstreamStatus, upstreamStatus: status, detail: "The upstream answered \(status)."))
        }
    }

    private func error(for code: CURLcode, transfer: CurlTransfer, url: CoverURL, request: UpstreamRequest) -> CoverError {
        if let failure = transfer.failure { return failure }
        let status = transfer.status == 0 ? nil : transfer.status
        if transfer.refusedAddress != nil, code == CURLE_COULDNT_CONNECT || code == CURLE_ABORTED_BY_CALLBACK {
            // The detail reaches anonymous clients (502, `cover.failed`): it must not say what an
            // internal name resolves to.
            return CoverError(
                .blockedAddress,
                detail: "The address of \(url.host) is not one covers may be fetched from (an internal or reserved range).")
        }
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return timeoutError(request.totalTimeout ?? configuration.totalTimeout)
        case CURLE_FILESIZE_EXCEEDED:
            // curl compares Content-Length with CURLOPT_MAXFILESIZE_LARGE before our header callback sees it.
            return CoverError(
                .tooLarge, upstreamStatus: status,
                detail: "The upstream announced a body over the limit of \(configuration.maxBodyBytes) bytes for covers.")
        case CURLE_COULDNT_RESOLVE_HOST:
            return CoverError(.connectionFailed, detail: "The host \(url.host) could not be resolved.")
        case CURLE_COULDNT_CONNECT:
            return CoverError(.connectionFailed, detail: "The connection to \(url.host) was refused or failed.")
        case CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR:
            return CoverError(
                .connectionDropped, upstreamStatus: status,
                detail: "The connection to \(url.host) broke before the whole cover arrived.")
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            return CoverError(.invalidURL, detail: "The cover URL cannot be fetched.")
        default:
            let text = String(cString: curl_easy_strerror(code))
            return CoverError(.transferFailed, upstreamStatus: status, detail: "The fetch failed: \(text).")
        }
    }

    private func timeoutError(_ totalTimeout: Duration) -> CoverError {
        CoverError(
            .timeout,
            detail: "The upstream did not deliver the cover within \(totalTimeout.milliseconds) ms.")
    }
}
