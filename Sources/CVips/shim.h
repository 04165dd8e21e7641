#ifndef BLUELIBRARY_CVIPS_SHIM_H
#define BLUELIBRARY_CVIPS_SHIM_H
#include <vips/vips.h>

/* libvips' operations take their optional arguments as a NULL-terminated variadic list of
   name/value pairs, which Swift cannot call. Each call the Images module makes gets one
   fixed-argument wrapper here; nothing else. The non-variadic API (vips_init, the image
   getters, g_object_unref, g_free, vips_error_buffer, ...) is called from Swift directly. */

/* The header of an image in `buffer`, without decoding its pixels (libvips loads lazily):
   sequential access, failing on errors and truncation. `buffer` must outlive `*out`. */
static inline int bl_vips_header_from_buffer(const void *buffer, size_t length, VipsImage **out) {
    *out = vips_image_new_from_buffer(buffer, length, "",
        "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_ERROR, NULL);
    return *out == NULL ? -1 : 0;
}

/* Shrink-on-load thumbnail fitting width x height, rotated upright by its EXIF orientation,
   first page/frame only, failing on errors and truncation. In libvips 8.14 thumbnail_buffer's
   own "fail_on" does not reach the loader (its option string does), and with "size" set to
   "down" a truncated PNG decodes without an error: the caller keeps the box no larger than
   the image instead. */
static inline int bl_vips_thumbnail_buffer(const void *buffer, size_t length, VipsImage **out, int width, int height) {
    return vips_thumbnail_buffer((void *) buffer, length, out, width,
        "height", height, "option_string", "fail_on=error", NULL);
}

/* A copy of the image's header (pixels shared), whose metadata may then be removed. */
static inline int bl_vips_copy(VipsImage *in, VipsImage **out) {
    return vips_copy(in, out, NULL);
}

/* Colour space conversion (CMYK, 16-bit RGB or grey to sRGB, with correct scaling). */
static inline int bl_vips_colourspace(VipsImage *in, VipsImage **out, VipsInterpretation space) {
    return vips_colourspace(in, out, space, NULL);
}

static inline int bl_vips_cast_uchar(VipsImage *in, VipsImage **out) {
    return vips_cast(in, out, VIPS_FORMAT_UCHAR, NULL);
}

/* A black image, for probing what the build can encode. */
static inline int bl_vips_black(VipsImage **out, int width, int height, int bands) {
    return vips_black(out, width, height, "bands", bands, NULL);
}

/* Encoders: every one strips metadata (EXIF, XMP, IPTC, ICC). The result is g_malloc'ed:
   free it with g_free. */
static inline int bl_vips_jpegsave_buffer(VipsImage *in, void **buffer, size_t *length, int quality) {
    return vips_jpegsave_buffer(in, buffer, length, "Q", quality, "strip", TRUE, "optimize_coding", TRUE, NULL);
}
static inline int bl_vips_pngsave_buffer(VipsImage *in, void **buffer, size_t *length) {
    return vips_pngsave_buffer(in, buffer, length, "strip", TRUE, NULL);
}
static inline int bl_vips_webpsave_buffer(VipsImage *in, void **buffer, size_t *length, int quality) {
    return vips_webpsave_buffer(in, buffer, length, "Q", quality, "strip", TRUE, NULL);
}
/* AVIF: HEIF with AV1 compression; `effort` 0 (fastest) to 9. */
static inline int bl_vips_avifsave_buffer(VipsImage *in, void **buffer, size_t *length, int quality, int effort) {
    return vips_heifsave_buffer(in, buffer, length, "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1,
        "Q", quality, "effort", effort, "strip", TRUE, NULL);
}
#endif
