import Foundation
import TestThreads
import Testing

@testable import BlueLibraryServer

/// The operator's documents stay in step with the code: every setting in the README's table,
/// no link out of the repository, the files it names present, the license the contract names.
@Suite(.ownThreads) struct OperatorDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static func text(_ name: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(name), encoding: .utf8)
    }

    @Test func theConfigurationTableHasEverySettingWithItsDefault() throws {
        let readme = try Self.text("README.md")
        for option in ServeConfiguration.options {
            let row = readme.split(separator: "\n").first { $0.hasPrefix("| `\(option.variable)` | `\(option.flag)`") }
            #expect(row != nil, "README's configuration table lacks \(option.variable)")
        }
        #expect(readme.contains("| `BLUELIBRARY_HOST` | `--host` | `127.0.0.1` |"))
    }

    @Test func noLinkLeavesTheRepository() throws {
        for name in ["README.md", "CHANGELOG.md", "docs/BENCHMARKS.md"] {
            let text = try Self.text(name)
            // Markdown links go to files of the repository, never up and out of it.
            let links = text.matches(of: /\]\(([^)]*)\)/).map { String($0.1) }
            for link in links {
                #expect(!link.contains("://") && !link.hasPrefix("/") && !link.contains(".."), "\(name) links out: \(link)")
            }
            #expect(!text.contains("../"), "\(name) names a path outside the repository")
            // Bare URLs are examples on this machine or example domains only.
            for match in text.matches(of: /https?:\/\/([A-Za-z0-9.\-\[\]:]+)/) {
                let host = String(match.1).lowercased()
                let local = host.hasPrefix("localhost") || host.hasPrefix("127.0.0.1") || host.hasPrefix("[::1]")
                    || host.hasPrefix("$host") || host.contains("example")
                #expect(local, "\(name) points at \(host)")
            }
        }
    }

    @Test func theFilesTheReadmeNamesArePresentAndTheLicenseIsTheContractsOne() throws {
        let readme = try Self.text("README.md")
        for name in ["LICENSE", "CHANGELOG.md", "docs/BENCHMARKS.md", "deploy/nginx.conf.example"] {
            #expect(readme.contains("`\(name)`"), "README does not name \(name)")
            #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(name).path), "\(name) is missing")
        }
        let spec = String(decoding: try SystemRoutes.loadSpec(), as: UTF8.self)
        #expect(spec.contains("  license:\n    name: MIT\n"))
        #expect(try Self.text("LICENSE").hasPrefix("MIT License"))
        // The TLS server block of the nginx example is there to be switched on.
        #expect(try Self.text("deploy/nginx.conf.example").contains("#     listen 443 ssl"))
    }
}
