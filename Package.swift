// swift-tools-version:6.0
import PackageDescription

let shared: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    // Release builds specialise generics and inline across modules (the request model's cache,
    // the middleware chain): measured 8-12% less CPU per cached-page request with scripts/bench.
    .unsafeFlags(["-cross-module-optimization"], .when(configuration: .release)),
]

let package = Package(
    name: "BlueLibrary",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "bluelibrary", targets: ["bluelibrary"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
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
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),

        // Linux system calls (epoll, eventfd, sendfile) that the Glibc module does not export.
        .systemLibrary(name: "CLinux"),

        // The reusable floor: knows nothing about albums.
        .target(name: "HTTPServer", dependencies: ["CLinux"], swiftSettings: shared),

        // A small, safe wrapper over libsqlite3: knows nothing about albums.
        .target(name: "SQLite", dependencies: ["CSQLite"], swiftSettings: shared),

        // The domain: albums, ordering rules, the facade, undo, state, archive. No I/O imports.
        .target(name: "Library", swiftSettings: shared),

        // AlbumStore on SQLite: the only module that knows SQL.
        .target(name: "Storage", dependencies: ["Library", "SQLite", "CLinux"], swiftSettings: shared),

        // Cover fetcher (libcurl) with a disk cache: implements Library's CoverSource.
        .target(name: "Covers", dependencies: ["Library", "CCurl"], swiftSettings: shared),

        // PBKDF2-HMAC-SHA256 and secure random bytes (libcrypto): knows nothing about albums.
        .target(name: "Crypto", dependencies: ["CCrypto"], swiftSettings: shared),

        // The HTTP face and composition root.
        .target(
            name: "BlueLibraryServer",
            dependencies: ["HTTPServer", "Library", "Storage", "Covers", "Crypto"],
            resources: [.copy("Resources/openapi.yaml")],
            swiftSettings: shared
        ),
        // The Swift client for apps: typed calls and the paged-list model. Knows nothing of the server's modules.
        .target(name: "BlueLibraryClient", swiftSettings: shared),

        .executableTarget(
            name: "bluelibrary",
            dependencies: ["BlueLibraryServer", "BlueLibraryClient"],
            swiftSettings: shared
        ),

        // Raw-socket HTTP client and child-process runner shared by the end-to-end tests.
        .target(name: "HTTPTestSupport", path: "Tests/HTTPTestSupport", swiftSettings: shared),

        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "HTTPTestSupport"], swiftSettings: shared),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite"], swiftSettings: shared),
        .testTarget(name: "LibraryTests", dependencies: ["Library"], swiftSettings: shared),
        .testTarget(name: "CoversTests", dependencies: ["Covers", "Library", "HTTPServer"], swiftSettings: shared),
        .testTarget(name: "StorageTests", dependencies: ["Storage", "Library", "SQLite"], swiftSettings: shared),
        .testTarget(
            name: "BlueLibraryServerTests",
            dependencies: ["BlueLibraryServer", "HTTPServer", "HTTPTestSupport", "bluelibrary", "Crypto", "Storage", "Library"],
            swiftSettings: shared
        ),
        .testTarget(
            name: "BlueLibraryClientTests",
            dependencies: ["BlueLibraryClient", "BlueLibraryServer", "HTTPTestSupport", "bluelibrary"],
            swiftSettings: shared
        ),
    ]
)
