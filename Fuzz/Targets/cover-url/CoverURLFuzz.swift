import Covers
import Essentials
import FuzzSupport

// Cover URL parsing (`coverURL` of an album, before anything is fetched). Properties: it never
// traps (nor do the address and range parsers); an accepted URL has a host, no default port and a path starting with `/`; its normal
// form parses to the same URL (the cache key is stable).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: FuzzInput(data, size).bytes, as: UTF8.self)
    // The address parsers the allow list and the SSRF guard use.
    if let address = IPAddress(text) { _ = CoverAddressPolicy().permits(address, host: text) }
    _ = IPAddressRange(text)
    guard let url = try? CoverURL(text) else { return 0 }
    check(!url.host.isEmpty, "no host in \(url)")
    check(url.scheme == "http" || url.scheme == "https", "scheme \(url.scheme)")
    check(url.pathAndQuery.hasPrefix("/"), "path \(url.pathAndQuery)")
    if let port = url.port { check(port > 0 && port <= 65535 && port != (url.scheme == "http" ? 80 : 443), "port \(port)") }
    let again = try? CoverURL(url.description)
    check(again == url, "\(text) → \(url) → \(String(describing: again))")
    return 0
}
