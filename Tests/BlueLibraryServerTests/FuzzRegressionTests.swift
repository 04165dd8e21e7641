import Essentials
import HTTPServer
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Inputs the fuzz targets in `Fuzz/` found (`scripts/fuzz`), kept as ordinary tests.
@Suite(.ownThreads) struct ForwardedHeadersFuzzRegressionTests {
    /// fuzz-forwarded-headers (base64 `AGZvcj0KATEyNy4wLjAuMQoAOzs9O2Zvcj0iOwo=`): `Forwarded: for=`
    /// puts no empty address in the chain (X-Forwarded-For drops empty entries too): behind
    /// trusted hops the empty string would become the client address, one lockout key for everyone.
    @Test func anEmptyForIsNoHop() {
        let trusted = ["10.0.0.0/8"].compactMap(IPAddressRange.init)
        let headers: HTTPHeaders = ["Forwarded": "for=, for=\"\", for=10.0.0.7"]
        let forwarded = ForwardedHeaders(headers, family: .forwarded)
        #expect(forwarded.chain == ["10.0.0.7"])
        #expect(forwarded.client(trusting: trusted) == "10.0.0.7")
        #expect(!ForwardedHeaders(["Forwarded": "for="], family: .forwarded).chain.contains(""))
    }
}
