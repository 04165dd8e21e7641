import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import HTTPServer
import TestThreads
import Testing

@testable import BlueLibraryServer

/// The spec is the contract: every route the router serves is in `openapi.yaml`, and every
/// path and method in the spec is served.
@Suite(.ownThreads) struct OpenAPISpecTests {
    @Test func routerAndSpecListTheSameRoutes() throws {
        let app = try TestApp.make()
        let served = Set(app.router.routeTable.map { "\($0.method.rawValue.lowercased()) \($0.pattern)" })
        let specified = try Set(SpecPaths.operations(in: SystemRoutes.loadSpec()))
        #expect(served.subtracting(specified).sorted() == [], "served but not in openapi.yaml")
        #expect(specified.subtracting(served).sorted() == [], "in openapi.yaml but not served")
        #expect(!served.isEmpty)
    }

    /// The `/libraries/{lib}/...` copies of the album routes are what
    /// `scripts/openapi-library-copies.py` derives from the bare routes (edit the bare route,
    /// then run the script).
    @Test func libraryRouteCopiesAreInStepWithTheBareRoutes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized
        let run = try ChildProcess.run(
            "/usr/bin/env", ["python3", root.appendingPathComponent("scripts/openapi-library-copies.py").path, "--check",
                             root.appendingPathComponent("openapi.yaml").path],
            environment: ProcessInfo.processInfo.environment, mergeStderr: true)
        let message = String(decoding: run.stdout, as: UTF8.self)
        #expect(run.status == 0, "\(message)")
    }

    /// Security is declared per operation exactly as AccessPolicy enforces it (`[]` on the
    /// always-open paths, else open-or-bearer with the scope of the route's rule, and 401, 403
    /// and 429), and every operation that reads a body lists 415 (scripts/check-spec-rules.py).
    @Test func everyOperationDeclaresTheSecurityTheServerEnforces() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized
        let open = AccessPolicy.alwaysOpen.sorted() + AccessPolicy.alwaysOpenPrefixes.map { $0 + "/*" }
            + AccessPolicy.rules.map { "\($0.key)=\($0.value.scope.rawValue)" }.sorted()
        let run = try ChildProcess.run(
            "/usr/bin/env", ["python3", root.appendingPathComponent("scripts/check-spec-rules.py").path,
                             root.appendingPathComponent("openapi.yaml").path] + open,
            environment: ProcessInfo.processInfo.environment, mergeStderr: true)
        #expect(run.status == 0, "\(String(decoding: run.stdout, as: UTF8.self))")
    }

    @Test func specIsValidOpenAPI31() throws {
        // openapi-spec-validator comes from PyPI; scripts/test installs it.
        let specPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../openapi.yaml").standardized.path
        let run = try ChildProcess.run(
            "/usr/bin/env",
            ["python3", "-c",
             "import sys\nfrom openapi_spec_validator import validate\nfrom openapi_spec_validator.readers import read_from_filename\nvalidate(read_from_filename(sys.argv[1])[0])",
             specPath],
            environment: ProcessInfo.processInfo.environment)
        let message = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status == 0, "\(message)")
    }
}

/// Reads `paths:` from the YAML spec: two-space-indented path keys, four-space method keys.
/// Enough for our own file's layout, which this test also pins.
enum SpecPaths {
    static func operations(in yaml: [UInt8]) -> [String] {
        let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options"]
        var result: [String] = []
        var inPaths = false
        var currentPath: String?
        for line in String(decoding: yaml, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true) {
            if !line.hasPrefix(" ") {
                inPaths = line.hasPrefix("paths:")
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":") {
                currentPath = String(line.dropFirst(2).dropLast())
            } else if line.hasPrefix("    "), !line.hasPrefix("     "), let path = currentPath {
                let key = line.dropFirst(4).split(separator: ":").first.map(String.init) ?? ""
                if methods.contains(key) { result.append("\(key) \(path)") }
            }
        }
        return result
    }
}
