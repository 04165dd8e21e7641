import CVips

/// libvips, started once per process: `vips_init`, its log warnings silenced, the operation cache off (every thumbnail is
/// made once and then cached on disk by the caller, so libvips' own cache would only hold
/// memory), and every image loader blocked except the formats covers come in (JPEG, PNG, GIF,
/// WebP, and HEIF/AVIF), so a hostile file cannot reach the rarely used loaders
/// (`vips_operation_block_set`, libvips 8.13+).
///
/// A `static let` gives once-only, thread-safe initialisation, as `curl_global_init` needs too;
/// libvips has no matching shutdown that is safe while other threads may still use it.
enum VipsRuntime {
    /// The loaders left open (libvips class names; subclasses such as the `_buffer` variants follow).
    static let allowedLoaders = [
        "VipsForeignLoadJpeg", "VipsForeignLoadPng", "VipsForeignLoadNsgif", "VipsForeignLoadWebp", "VipsForeignLoadHeif",
    ]

    /// What the start found: nil when libvips started, else why it did not.
    private static let startFailure: String? = {
        guard vips_init("bluelibrary") == 0 else { return VipsFailure.takeMessage() }
        // libvips' warnings (a truncated file, a damaged chunk) would go to stderr between the
        // server's JSON log lines; what matters comes back as the failing call's error.
        let levels = GLogLevelFlags(rawValue: G_LOG_LEVEL_WARNING.rawValue | G_LOG_LEVEL_MESSAGE.rawValue | G_LOG_LEVEL_INFO.rawValue)
        _ = g_log_set_handler("VIPS", levels, { _, _, _, _ in }, nil)
        vips_cache_set_max(0)
        // One libvips worker per pipeline: the variant pool is the parallelism (and the memory
        // bound: one decode per pool thread). It also closes a libvips 8.14 race: with several
        // workers computing tiles of one sequentially read PNG, the error of a truncated file is
        // sometimes lost and a grey-filled image saved (seen in about 1 of 300 thumbnails alone,
        // up to 1 in 5 beside other decodes; never with one worker).
        vips_concurrency_set(1)
        vips_operation_block_set("VipsForeignLoad", 1)
        for loader in allowedLoaders { vips_operation_block_set(loader, 0) }
        return nil
    }()

    /// Whether this libvips build can write AVIF (HEIF with the AV1 encoder): probed once by
    /// encoding a small image, since `heifsave` may exist without an AV1 encoder.
    static let canWriteAVIF: Bool = {
        guard (try? start()) != nil else { return false }
        var black: UnsafeMutablePointer<CVips.VipsImage>?
        guard bl_vips_black(&black, 8, 8, 3) == 0, let black else {
            vips_error_clear()
            return false
        }
        defer { g_object_unref(black) }
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        let written = bl_vips_avifsave_buffer(black, &buffer, &length, 50, 0) == 0 && length > 0
        g_free(buffer)
        if !written { vips_error_clear() }
        return written
    }()

    /// Starts libvips if it is not running yet.
    /// - Throws: ``ImageError`` (`unavailable`) when `vips_init` failed.
    static func start() throws(ImageError) {
        if let startFailure { throw ImageError(.unavailable, detail: "libvips did not start: \(startFailure)") }
    }
}

/// libvips reports errors in a process-wide buffer: copied and cleared in one step under its
/// lock (`vips_error_buffer_copy`, libvips 8.9+) right after the failing call. Under
/// concurrency the text may also hold another thread's message; the caller's own error reason
/// never depends on it.
enum VipsFailure {
    static func takeMessage() -> String {
        var message = ""
        if let copy = vips_error_buffer_copy() {
            message = String(cString: copy)
            g_free(copy)
        }
        let lines = message.split(whereSeparator: \.isNewline).map { $0.drop(while: \.isWhitespace) }
        let text = lines.filter { !$0.isEmpty }.prefix(3).joined(separator: "; ")
        return text.isEmpty ? "no reason given" : String(text.prefix(300))
    }
}
