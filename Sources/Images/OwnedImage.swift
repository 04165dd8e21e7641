import CVips

/// Owns one `VipsImage` reference (released in `deinit`). Confined to the thread that made it:
/// never stored or shared beyond the call that created it.
///
/// The pointer is only lent, through ``withPointer(_:)``: the image (and whatever points into
/// it, such as its metadata strings) stays alive for the whole C call, whatever the optimizer
/// decides about the object's last use.
final class OwnedImage {
    private let pointer: UnsafeMutablePointer<CVips.VipsImage>

    init(_ pointer: UnsafeMutablePointer<CVips.VipsImage>) { self.pointer = pointer }

    deinit { g_object_unref(pointer) }

    /// Runs `body` with the image's pointer, keeping the image alive until it returns. The
    /// pointer (and anything read through it) must not escape `body`.
    func withPointer<T, E: Error>(_ body: (UnsafeMutablePointer<CVips.VipsImage>) throws(E) -> T) throws(E) -> T {
        defer { withExtendedLifetime(self) {} }
        return try body(pointer)
    }

    var width: Int { withPointer { Int(vips_image_get_width($0)) } }
    var height: Int { withPointer { Int(vips_image_get_height($0)) } }
    var bands: Int { withPointer { Int(vips_image_get_bands($0)) } }
    var hasAlpha: Bool { withPointer { vips_image_hasalpha($0) != 0 } }
    var interpretation: VipsInterpretation { withPointer { vips_image_get_interpretation($0) } }
    var bandFormat: VipsBandFormat { withPointer { vips_image_get_format($0) } }
    /// Frames of an animation (pages of a multi-page file); 1 for a still image.
    var pages: Int { withPointer { Int(vips_image_get_n_pages($0)) } }

    /// Runs a libvips call that makes a new image; its failure becomes `reason` with libvips' message.
    static func make(
        _ reason: ImageError.Reason, _ what: String, _ call: (inout UnsafeMutablePointer<CVips.VipsImage>?) -> Int32
    ) throws(ImageError) -> OwnedImage {
        var out: UnsafeMutablePointer<CVips.VipsImage>?
        let status = call(&out)
        guard status == 0, let out else {
            if let out { g_object_unref(out) }
            throw ImageError(reason, detail: "\(what): \(VipsFailure.takeMessage())")
        }
        return OwnedImage(out)
    }

    /// This image as 8-bit sRGB (or 8-bit grey), alpha kept: CMYK goes through libvips' CMYK
    /// profile, 16-bit values are scaled (65535 → 255), not clipped.
    func eightBitSRGB() throws(ImageError) -> OwnedImage {
        var image = self
        let grey = [VIPS_INTERPRETATION_B_W, VIPS_INTERPRETATION_GREY16].contains(interpretation)
        let target = grey ? VIPS_INTERPRETATION_B_W : VIPS_INTERPRETATION_sRGB
        if image.interpretation != target {
            let source = image
            image = try Self.make(.corrupt, "colour conversion") { out in source.withPointer { bl_vips_colourspace($0, &out, target) } }
        }
        if image.bandFormat != VIPS_FORMAT_UCHAR {
            let source = image
            image = try Self.make(.corrupt, "8-bit conversion") { out in source.withPointer { bl_vips_cast_uchar($0, &out) } }
        }
        return image
    }

    /// This image without its alpha band when every pixel is opaque (GIF always loads with
    /// one), computed into memory once so the pixels are not decoded twice; unchanged when it
    /// has no alpha or some transparency.
    func withoutOpaqueAlpha() throws(ImageError) -> OwnedImage {
        guard hasAlpha, bandFormat == VIPS_FORMAT_UCHAR, bands >= 2 else { return self }
        guard let pixels = withPointer({ vips_image_copy_memory($0) }) else {
            throw ImageError(.corrupt, detail: "decoding failed: \(VipsFailure.takeMessage())")
        }
        let memory = OwnedImage(pixels)
        let alpha = try Self.make(.corrupt, "alpha band") { out in
            memory.withPointer { bl_vips_extract_bands($0, &out, Int32(bands - 1), 1) }
        }
        var minimum = 0.0
        guard alpha.withPointer({ bl_vips_min($0, &minimum) }) == 0 else {
            throw ImageError(.corrupt, detail: "reading the alpha band failed: \(VipsFailure.takeMessage())")
        }
        guard minimum >= 255 else { return memory }
        let colour = bands - 1
        return try Self.make(.corrupt, "dropping the alpha band") { out in
            memory.withPointer { bl_vips_extract_bands($0, &out, 0, Int32(colour)) }
        }
    }

    /// A copy without metadata: every field that is not a header field (EXIF with GPS, XMP,
    /// IPTC, ICC profile, orientation, animation fields) is removed, so no saver can write it
    /// (the savers' own `strip` misses EXIF in WebP in libvips 8.14).
    func withoutMetadata() throws(ImageError) -> OwnedImage {
        let source = self
        let copy = try Self.make(.encodeFailed, "copy") { out in source.withPointer { bl_vips_copy($0, &out) } }
        copy.withPointer { pointer in
            guard let fields = vips_image_get_fields(pointer) else { return }
            defer { g_strfreev(fields) }
            var index = 0
            while let name = fields[index] {
                // Header fields (width, bands, interpretation, ...) cannot be removed: the call
                // leaves them alone.
                _ = vips_image_remove(pointer, name)
                index += 1
            }
        }
        return copy
    }

    /// The encoded bytes (metadata stripped); decoding errors of lazy pipelines surface here.
    func encoded(as format: ImageFormat, quality: Int, avifEffort: Int) throws(ImageError) -> [UInt8] {
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        let status: Int32 = withPointer { image in
            switch format {
            case .jpeg: bl_vips_jpegsave_buffer(image, &buffer, &length, Int32(quality))
            case .png: bl_vips_pngsave_buffer(image, &buffer, &length)
            case .webp: bl_vips_webpsave_buffer(image, &buffer, &length, Int32(quality))
            case .avif: bl_vips_avifsave_buffer(image, &buffer, &length, Int32(quality), Int32(avifEffort))
            }
        }
        defer { g_free(buffer) }
        guard status == 0, let buffer, length > 0 else {
            // The pixels are computed while saving: a truncated or corrupt source fails here.
            throw ImageError(.corrupt, detail: "decoding or \(format.rawValue) encoding failed: \(VipsFailure.takeMessage())")
        }
        let bytes = Array(UnsafeRawBufferPointer(start: buffer, count: length))
        return format == .webp ? WebPMetadata.stripped(bytes) : bytes
    }
}

/// A libvips image reference stays on the thread that made it.
@available(*, unavailable)
extension OwnedImage: Sendable {}
