// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets for BlueLibrary's parsers. Not built by the main package: `scripts/fuzz`
// builds this package with `-sanitize=fuzzer,address` and runs the targets. Each target is one
// file defining `LLVMFuzzerTestOneInput`; the modules are reached through the main package's
// `FuzzedModules` product and its `@_spi(Fuzzing)` seams.
let targets = [
    "http-head", "chunked-body", "page-cursor", "json-scanner",
    "archive", "settings-patch", "forwarded-headers", "cover-url",
]

let package = Package(
    name: "BlueLibraryFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "BlueLibrary", path: "..")],
    targets: [
        .target(name: "FuzzSupport", path: "Sources/FuzzSupport"),
    ] + targets.map { name in
        .executableTarget(
            name: "fuzz-\(name)",
            dependencies: ["FuzzSupport", .product(name: "FuzzedModules", package: "BlueLibrary")],
            path: "Targets/\(name)"
        )
    }
)
