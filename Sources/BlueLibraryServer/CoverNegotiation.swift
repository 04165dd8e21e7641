import Covers
import HTTPServer

/// What a cover request asks for: the original (no `size`) or a sized variant in the format
/// its `Accept` header allows.
enum CoverNegotiation {
    /// The variant a request asks for, or nil for the original.
    ///
    /// - `size`: one of ``CoverVariant/allowedSizes``, else 400 listing them.
    /// - Format: `image/avif` (when this build writes AVIF) or `image/webp` named in `Accept`
    ///   with q > 0, the higher q winning (AVIF on a tie); otherwise JPEG, or PNG for a cover
    ///   with transparency. Wildcards (`image/*`, `*/*`) do not count: a client that names
    ///   neither modern format gets what every client reads.
    static func variant(_ request: HTTPRequest) throws -> CoverVariant? {
        guard let text = QueryParameters(request).text("size") else { return nil }
        guard let size = Int(text), let variant = CoverVariant(size: size, format: format(request)) else {
            let allowed = CoverVariant.allowedSizes.map(String.init).joined(separator: ", ")
            throw QueryParameters.invalid("size", "size must be one of \(allowed) (the longer side in pixels), not '\(QueryParameters.quoted(text))'.")
        }
        return variant
    }

    /// The variant format `Accept` allows (see ``variant(_:)``).
    static func format(_ request: HTTPRequest) -> CoverVariantFormat {
        var avif = 0.0, webp = 0.0
        for range in request.headers.values(for: "Accept").flatMap({ $0.split(separator: ",") }) {
            let parts = range.split(separator: ";").map { String($0).trimmingASCIIWhitespace().lowercased() }
            guard let type = parts.first else { continue }
            var quality = 1.0
            for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
                quality = Double(parameter.dropFirst(2)) ?? 0
            }
            if type == "image/avif" { avif = max(avif, quality) }
            if type == "image/webp" { webp = max(webp, quality) }
        }
        if !CoverVariantFormat.canWriteAVIF { avif = 0 }
        if avif > 0, avif >= webp { return .avif }
        if webp > 0 { return .webp }
        return .jpegOrPNG
    }
}
