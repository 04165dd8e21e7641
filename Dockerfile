# syntax=docker/dockerfile:1
# BlueLibrary: build with the same script as everywhere else, run on a slim Debian.
#   docker build -t bluelibrary .
#   docker run -d --read-only --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges \
#     -p 127.0.0.1:8080:8080 -v bluelibrary-data:/data bluelibrary   (README: Running in a container)
# The base images are build arguments (defaults: the official images), so a machine without a
# registry can pass its own (scripts/container-test builds them with debootstrap):
#   docker build --build-arg SWIFT_IMAGE=... --build-arg RUNTIME_IMAGE=... -t bluelibrary .
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# ---- build ------------------------------------------------------------------------------
FROM ${SWIFT_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libsqlite3-dev libcurl4-openssl-dev libpq-dev libssl-dev libvips-dev pkg-config \
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

# ---- runtime ----------------------------------------------------------------------------
FROM ${RUNTIME_IMAGE}
# Only what the binary links (readelf -d: libsqlite3, libpq, libcurl, libcrypto, libvips,
# libstdc++) and the CA certificates for HTTPS covers; no tzdata (the server logs and answers
# in UTC). libvips42 (cover sizes) is most of the image: Debian builds it with every format
# (HEIF/x265, SVG, PDF, OpenEXR, HDF5, ImageMagick...), 80 packages and 156 MB with its ICU.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libsqlite3-0 libcurl4 libpq5 libssl3 libvips42 libstdc++6 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
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
