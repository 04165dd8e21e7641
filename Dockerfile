# syntax=docker/dockerfile:1
# BlueLibrary: build with the same script as everywhere else, run on a slim Debian.
#   docker build -t bluelibrary .
#   docker run -p 8080:8080 -v bluelibrary-data:/data bluelibrary

# ---- build ------------------------------------------------------------------------------
FROM swift:6.3-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libsqlite3-dev libcurl4-openssl-dev libpq-dev libssl-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Static Swift runtime, so the runtime image needs no Swift libraries.
RUN BLUELIBRARY_STATIC=1 scripts/build \
 && mkdir -p /out \
 && cp .build/release/bluelibrary /out/ \
 && cp -R .build/release/BlueLibrary_BlueLibraryServer.resources /out/

# ---- runtime ----------------------------------------------------------------------------
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libsqlite3-0 libcurl4 libpq5 libssl3 libstdc++6 ca-certificates tzdata \
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
