# syntax=docker/dockerfile:1
# BlueLibrary: build with the same script as everywhere else, run on a slim Debian.
#   docker build -t bluelibrary .
#   docker run -d --read-only --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges \
#     -p 127.0.0.1:8080:8080 -v bluelibrary-data:/data bluelibrary   (docs/container.md)
# The base images are build arguments (defaults: the official images), so a machine without a
# registry can pass its own (scripts/container-test builds them with debootstrap):
#   docker build --build-arg SWIFT_IMAGE=... --build-arg RUNTIME_IMAGE=... -t bluelibrary .
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# ---- build ------------------------------------------------------------------------------
FROM ${SWIFT_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libsqlite3-dev libcurl4-openssl-dev libpq-dev libssl-dev libvips-dev zlib1g-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Static Swift runtime, so the runtime image needs no Swift libraries. The build directory is a
# cache (kept between builds of this Dockerfile: a rebuild compiles only what changed), so the
# results are copied out in the same step. Symbols and debug info are stripped: 60 MiB instead
# of 83 (crash backtraces then show addresses; keep an unstripped build beside if you need them).
RUN --mount=type=cache,target=/src/.build,id=bluelibrary-swiftpm \
    BLUELIBRARY_STATIC=1 scripts/build \
 && mkdir -p /out \
 && cp .build/release/bluelibrary /out/ \
 && strip --strip-all /out/bluelibrary \
 && cp -R .build/release/BlueLibrary_BlueLibraryServer.resources /out/

# ---- libvips ----------------------------------------------------------------------------
# Cover sizes need libvips for JPEG, PNG, WebP and GIF in, JPEG/PNG/WebP out, EXIF orientation
# and ICC profiles. Debian's libvips42 is built with every format (HEIF/x265, SVG, PDF, OpenEXR,
# HDF5, ImageMagick...): 80 packages, 156 MB. This is the same Debian source package (with its
# security patches; `apt-get source` fetches the current one) built with only those formats,
# on the runtime base so it links the same libraries. Same version and ABI as the libvips-dev
# the server is compiled against; the runtime stage copies libvips.so.42 from here.
FROM ${RUNTIME_IMAGE} AS vips
RUN if [ -f /etc/apt/sources.list.d/debian.sources ]; then \
        sed -i 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources; \
    else \
        sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >/etc/apt/sources.list.d/deb-src.list; \
    fi \
 && apt-get update \
 && apt-get install -y --no-install-recommends dpkg-dev gcc g++ libc6-dev pkg-config meson ninja-build \
      libglib2.0-dev libexpat1-dev libjpeg62-turbo-dev libpng-dev libwebp-dev libexif-dev liblcms2-dev zlib1g-dev \
 && mkdir /vips && cd /vips && apt-get source --only-source vips && cd vips-*/ \
 && meson setup build --prefix=/usr/local --libdir=lib --buildtype=release --auto-features=disabled \
      -Djpeg=enabled -Dpng=enabled -Dwebp=enabled -Dexif=enabled -Dlcms=enabled -Dzlib=enabled \
      -Dnsgif=true -Dppm=false -Danalyze=false -Dradiance=false -Dmodules=disabled -Dintrospection=false \
      -Dcplusplus=false -Ddeprecated=false -Dexamples=false \
 && ninja -C build install \
 && mkdir /out && cp -a /usr/local/lib/libvips.so.42* /out/

# ---- runtime ----------------------------------------------------------------------------
FROM ${RUNTIME_IMAGE}
# Only what the binary links (readelf -d: libsqlite3, libpq, libcurl, libcrypto, libvips,
# libstdc++; libz is in every Debian image), what the libvips above links, and the CA certificates for HTTPS covers; no tzdata
# (the server logs and answers in UTC).
COPY --from=vips /out/ /usr/local/lib/
RUN apt-get update \
 && apt-get install -y --no-install-recommends libsqlite3-0 libcurl4 libpq5 libssl3 libstdc++6 ca-certificates \
      libglib2.0-0 libexpat1 libjpeg62-turbo libpng16-16 libwebp7 libwebpmux3 libwebpdemux2 libexif12 liblcms2-2 \
 && rm -rf /var/lib/apt/lists/* \
 && ldconfig \
 && useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin bluelibrary \
 && mkdir -p /data && chown bluelibrary:bluelibrary /data
# The resource bundle must sit next to the executable (SwiftPM's Bundle.module looks there).
COPY --from=build /out/bluelibrary /usr/local/bin/bluelibrary
COPY --from=build /out/BlueLibrary_BlueLibraryServer.resources /usr/local/bin/BlueLibrary_BlueLibraryServer.resources
ENV BLUELIBRARY_DATA_DIR=/data \
    BLUELIBRARY_HOST=0.0.0.0 \
    BLUELIBRARY_PORT=8080
USER bluelibrary
WORKDIR /data
VOLUME /data
EXPOSE 8080
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["bluelibrary", "healthcheck"]
ENTRYPOINT ["bluelibrary"]
CMD ["serve"]
