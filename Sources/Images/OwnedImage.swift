import CVips

/// Owns one `VipsImage` reference (released in `deinit`). Confined to the thread that made it:
/// never stored or shared beyond the call that created it.
final class OwnedImage {
    let pointer: UnsafeMutablePointer<CVips.VipsImage>

    init(_ pointer: UnsafeMutablePointer<CVips.VipsImage>) { self.pointer = pointer }

    deinit { g_object_unref(pointer) }

    var width: Int { Int(vips_image_get_width(pointer)) }
    var height: Int { Int(vips_image_get_height(pointer)) }
    var bands: Int { Int(vips_image_get_bands(pointer)) }
    var hasAlpha: Bool { vips_image_hasalpha(pointer) != 0 }
    var interpretation: VipsInterpretation { vips_image_get_interpretation(pointer) }
    var bandFormat: VipsBandFormat { vips_image_get_format(pointer) }
    /// Frames of an animation (pages of a multi-page file); 1 for a still image.
    var pages: Int { Int(vips_image_get_n_pages(pointer)) }

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
            image = try Self.make(.corrupt, "colour conversion") { bl_vips_colourspace(source.pointer, &$0, target) }
        }
        if image.bandFormat != VIPS_FORMAT_UCHAR {
            let source = image
            image = try Self.make(.corrupt, "8-bit conversion") { bl_vips_cast_uchar(source.pointer, &$0) }
        }
        return image
    }

    /// A copy without metadata: every field that is not a header field (EXIF with GPS, XMP,
    /// IPTC, ICC profile, orientation, animation fields) is removed, so no saver can write it
    /// (the savers' own `strip` misses EXIF in WebP in libvips 8.14).
    func withoutMetadata() throws(ImageError) -> OwnedImage {
        let source = self
        let copy = try Self.make(.encodeFailed, "copy") { bl_vips_copy(source.pointer, &$0) }
        guard let fields = vips_image_get_fields(copy.pointer) else { return copy }
        defer { g_strfreev(fields) }
        var index = 0
        while let name = fields[index] {
            // Header fields (width, bands, interpretation, ...) cannot be removed: the call
            // leaves them alone.
            _ = vips_image_remove(copy.pointer, name)
            index += 1
        }
        return copy
    }

    /// The encoded bytes (metadata stripped); decoding errors of lazy pipelines surface here.
    func encoded(as format: ImageFormat, quality: Int, avifEffort: Int) throws(ImageError) -> [UInt8] {
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        let status: Int32 = switch format {
        case .jpeg: bl_vips_jpegsave_buffer(pointer, &buffer, &length, Int32(quality))
        case .png: bl_vips_pngsave_buffer(pointer, &buffer, &length)
        case .webp: bl_vips_webpsave_buffer(pointer, &buffer, &length, Int32(quality))
        case .avif: bl_vips_avifsave_buffer(pointer, &buffer, &length, Int32(quality), Int32(avifEffort))
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
