@_spi(Fuzzing) import BlueLibraryServer
import Essentials
import FuzzSupport
import HTTPServer

// The proxy headers (`Forwarded`, `X-Forwarded-For/-Proto/-Host`) as the forwarded-headers
// middleware reads them (each family in turn), and the trusted-proxy ranges it matches the
// chain against.
// The input is lines; each line's first byte picks the header name, the rest is its value.
// Properties: it never traps; no address in the chain is empty.

private let names = ["Forwarded", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "forwarded", "X-FORWARDED-FOR"]
private let trusted = ["10.0.0.0/8", "127.0.0.1", "::1/128", "fd00::/8", "192.168.1.0/24"].compactMap(IPAddressRange.init)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = FuzzInput(data, size).bytes
    var headers = HTTPHeaders()
    for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) where !line.isEmpty {
        let name = names[Int(line[line.startIndex]) % names.count]
        headers.add(name, String(decoding: line.dropFirst(), as: UTF8.self))
    }
    for family in ForwardedHeaderFamily.allCases {
        let forwarded = ForwardedHeadersFuzzingSeam.parse(headers, family: family)
        for address in forwarded.chain {
            check(!address.isEmpty, "an empty address in the \(family) chain \(forwarded.chain)")
            if let parsed = IPAddress(address) { _ = trusted.containsAddress(parsed) }
            _ = IPAddressRange(address)
        }
    }
    return 0
}
