// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "BlueLibrary",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "bluelibrary", targets: ["bluelibrary"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        // For the fuzz targets in Fuzz/ (a package of their own): the modules they drive,
        // through `@_spi(Fuzzing)` seams.
        .library(name: "FuzzedModules", targets: ["Essentials", "HTTPServer", "BlueLibraryAPI", "Library", "Covers", "BlueLibraryServer"]),
    ],
    targets: [
        // System libraries (Debian packages), wrapped once each.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CPostgres",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),

        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),

        // libvips (the header <vips/vips.h> is on the default include path; its GLib headers are
        // found through gobject-2.0's pkg-config file). Not `pkgConfig: "vips"`: vips.pc requires
        // gio-2.0, whose Cflags carry -pthread, which SwiftPM drops with a warning on every build.
        .systemLibrary(
            name: "CVips",
            pkgConfig: "gobject-2.0",
            providers: [.apt(["libvips-dev"])]
        ),

        // Linux system calls (epoll, eventfd, sendfile) that the Glibc module does not export.
        .systemLibrary(name: "CLinux"),

        // Small tools every module may share (clocks, durations, JSON strings, timestamps, FNV-1a, IP ranges,
        // a bounded thread pool, single-flight): imports nothing of ours.
        .target(name: "Essentials", dependencies: ["CLinux"], swiftSettings: strict),

        // The reusable floor: knows nothing about albums.
        .target(name: "HTTPServer", dependencies: ["Essentials", "CLinux"], swiftSettings: strict),

        // A small, safe wrapper over libsqlite3: knows nothing about albums.
        .target(name: "SQLite", dependencies: ["Essentials", "CSQLite"], swiftSettings: strict),

        // A small, safe wrapper over libpq (connections, typed parameters, prepared statements,
        // transactions, LISTEN/NOTIFY, a bounded pool): knows nothing about albums.
        .target(name: "Postgres", dependencies: ["Essentials", "CPostgres"], swiftSettings: strict),

        // Thumbnails with libvips (pixel limit from the header, shrink-on-load, EXIF orientation,
        // metadata stripped, JPEG/PNG/WebP/AVIF): knows nothing about albums or HTTP.
        .target(name: "Images", dependencies: ["CVips"], swiftSettings: strict),

        // The wire contract the server and the Swift client share: the resources' Codable types,
        // their field names and the server's fast album encoder. Imports only Essentials.
        .target(name: "BlueLibraryAPI", dependencies: ["Essentials"], swiftSettings: strict),

        // The domain: albums, ordering rules, the facade, undo, state, archive. No I/O imports.
        .target(name: "Library", dependencies: ["Essentials", "BlueLibraryAPI"], swiftSettings: strict),

        // What the server keeps besides albums (access token and failures, idempotency keys,
        // secrets): protocols and values that Storage implements and BlueLibraryServer uses.
        .target(name: "ServerRecords", swiftSettings: strict),

        // AlbumStore (and the ServerRecords stores) on SQLite and on PostgreSQL: the only module that knows SQL.
        .target(name: "Storage", dependencies: ["Essentials", "BlueLibraryAPI", "Library", "ServerRecords", "SQLite", "Postgres", "CLinux"], swiftSettings: strict),

        // Cover fetcher (libcurl) with a disk cache and sized variants (Images): implements Library's CoverSource.
        .target(name: "Covers", dependencies: ["Essentials", "Library", "Crypto", "CCurl", "Images"], swiftSettings: strict),

        // gzip of a buffer in memory (zlib): knows nothing about HTTP or albums.
        .target(name: "Gzip", dependencies: ["CZlib"], swiftSettings: strict),

        // PBKDF2-HMAC-SHA256, HMAC-SHA256 and secure random bytes (libcrypto): knows nothing about albums.
        .target(name: "Crypto", dependencies: ["CCrypto"], swiftSettings: strict),

        // The HTTP face and composition root.
        .target(
            name: "BlueLibraryServer",
            dependencies: ["Essentials", "HTTPServer", "BlueLibraryAPI", "Library", "ServerRecords", "Storage", "Covers", "Crypto", "Gzip"],
            resources: [.copy("Resources/openapi.yaml"), .copy("Resources/app"), .copy("Resources/docs")],
            swiftSettings: strict
        ),
        // The Swift client for apps: typed calls, the paged-list model and the offline replica (on the
        // SQLite wrapper, the one module of ours it may use). Knows nothing of the server's modules.
        // On Linux its transport is libcurl (CCurl), not FoundationNetworking's URLSession.
        .target(name: "BlueLibraryClient", dependencies: ["SQLite", "BlueLibraryAPI", .target(name: "CCurl", condition: .when(platforms: [.linux]))],
                swiftSettings: strict),

        .executableTarget(
            name: "bluelibrary",
            dependencies: ["BlueLibraryServer", "BlueLibraryClient", "Essentials"],
            swiftSettings: strict
        ),

        // The tests' shared helpers, one of each: the raw-socket HTTP client, `eventually` (poll with a
        // deadline), TemporaryDirectory, SeededGenerator, the child-process runner, nginx, tmpfs volumes.
        // The suite trait that runs test bodies on threads of their own (every test target has it).
        .target(name: "TestThreads", path: "Tests/TestThreads", swiftSettings: strict),
        .target(name: "HTTPTestSupport", dependencies: ["Essentials"], path: "Tests/HTTPTestSupport", swiftSettings: strict),
        // The tests' helpers that need the app: TestApp (the real app on a free port), InMemoryApp (the
        // app on the in-memory store with fake covers and a manual clock), InProcessClient.
        .target(
            name: "BlueLibraryTestSupport",
            dependencies: ["BlueLibraryServer", "HTTPServer", "HTTPTestSupport", "AlbumStoreContract", "Covers", "Library", "Storage",
                           "Essentials"],
            path: "Tests/BlueLibraryTestSupport",
            swiftSettings: strict
        ),

        // The AlbumStore contract, written once and run against every store (in-memory in
        // LibraryTests, SQLite in StorageTests), with the in-memory stores and the facade fixture.
        .target(name: "AlbumStoreContract", dependencies: ["Essentials", "BlueLibraryAPI", "Library", "ServerRecords", "HTTPTestSupport"], path: "Tests/AlbumStoreContract", swiftSettings: strict),

        .testTarget(name: "TestThreadsTests", swiftSettings: strict),
        .testTarget(name: "EssentialsTests", dependencies: ["Essentials", "HTTPTestSupport"], swiftSettings: strict),
        .testTarget(name: "HTTPServerTests", dependencies: ["Essentials", "HTTPServer", "HTTPTestSupport"], swiftSettings: strict),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite", "HTTPTestSupport", "Essentials"], swiftSettings: strict),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "HTTPTestSupport", "Essentials"], swiftSettings: strict),
        // The AlbumStore contract, unchanged, and writes through several instances at once, on PostgreSQL.
        .testTarget(
            name: "PostgresStoreTests",
            dependencies: ["Storage", "Postgres", "Library", "ServerRecords", "Essentials", "HTTPTestSupport", "AlbumStoreContract"],
            swiftSettings: strict),
        // The wire types against openapi.yaml (every field, type, nullability and bound) and the
        // fast album encoder against their Codable form.
        .testTarget(name: "BlueLibraryAPITests", dependencies: ["BlueLibraryAPI", "Essentials", "HTTPTestSupport"], swiftSettings: strict),
        .testTarget(name: "LibraryTests", dependencies: ["BlueLibraryAPI", "Library", "HTTPTestSupport", "AlbumStoreContract"], swiftSettings: strict),
        .testTarget(name: "ServerRecordsTests", dependencies: ["ServerRecords"], swiftSettings: strict),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto"], swiftSettings: strict),
        // gzip output decoded again by the `gzip` command.
        .testTarget(name: "GzipTests", dependencies: ["Gzip", "HTTPTestSupport"], swiftSettings: strict),
        // Thumbnails of images the tests make (every size and format, EXIF, CMYK, 16-bit,
        // animations, bombs, truncated and corrupt files), decoded again by the `vips` command.
        .testTarget(name: "ImagesTests", dependencies: ["Images", "HTTPTestSupport"], swiftSettings: strict),
        .testTarget(name: "CoversTests", dependencies: ["Essentials", "Covers", "Images", "Library", "HTTPServer", "HTTPTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "StorageTests", dependencies: ["Storage", "BlueLibraryAPI", "Library", "ServerRecords", "SQLite", "HTTPTestSupport", "AlbumStoreContract"],
            swiftSettings: strict),
        // The PostgreSQL schema, ServerRecords on PostgreSQL and the SQLite-to-PostgreSQL migration,
        // against a throwaway PostgreSQL (HTTPTestSupport's PostgresServer); `bluelibrary migrate` end to end.
        .testTarget(
            name: "PostgresStorageTests",
            dependencies: ["Storage", "Postgres", "Library", "ServerRecords", "SQLite", "Essentials", "HTTPTestSupport",
                           "bluelibrary", "BlueLibraryAPI", "AlbumStoreContract"],
            swiftSettings: strict),
        .testTarget(
            name: "BlueLibraryServerTests",
            dependencies: ["Essentials", "BlueLibraryAPI", "BlueLibraryServer", "HTTPServer", "HTTPTestSupport", "BlueLibraryTestSupport", "bluelibrary", "Crypto", "Storage", "Library", "ServerRecords", "AlbumStoreContract", "SQLite"],
            swiftSettings: strict
        ),
        // Several real `bluelibrary serve` processes on one PostgreSQL behind a real nginx
        // (deploy/nginx.scale-out.conf): concurrent writes, database outage, SIGKILL, pool limit.
        .testTarget(
            name: "MultiInstanceTests",
            dependencies: ["Essentials", "HTTPTestSupport", "bluelibrary"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BlueLibraryClientTests",
            dependencies: ["BlueLibraryClient", "BlueLibraryServer", "HTTPTestSupport", "BlueLibraryTestSupport", "bluelibrary", "Library",
                           "SQLite"],
            swiftSettings: strict
        ),
    ]
)

// Every test target can use `@Suite(.ownThreads)` (Tests/TestThreads), and every suite does.
for target in package.targets where target.type == .test {
    target.dependencies.append("TestThreads")
}
