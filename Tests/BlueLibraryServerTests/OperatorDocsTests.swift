import Foundation
import TestThreads
import Testing

@testable import BlueLibraryServer

/// The operator's documents (the README and the guides under docs/) stay in step with the code:
/// every setting in the configuration table and no row the server does not know, no link out of
/// the repository, every relative link pointing at a file that exists, no issue numbers, the
/// files the README names present, the license the contract names.
@Suite(.ownThreads) struct OperatorDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static func text(_ name: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(name), encoding: .utf8)
    }

    /// Every `docs/*.md`, as paths from the repository root, sorted.
    static func guides() throws -> [String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
        return names.filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
    }

    /// The README and every guide: the documents that describe the code as it is.
    static func documents() throws -> [String] { try ["README.md"] + guides() }

    /// The text outside fenced code blocks (```), so that code examples are not read as prose.
    static func prose(_ text: String) -> String {
        var inFence = false
        var kept: [Substring] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.trimmingPrefix(while: { $0 == " " }).hasPrefix("```") {
                inFence.toggle()
                continue
            }
            if !inFence { kept.append(line) }
        }
        return kept.joined(separator: "\n")
    }

    /// The first cells of a table row, trimmed: "| a | b | c |" gives ["a", "b", "c", ...].
    /// The last cell returned holds the rest of the row (a description may contain `|`).
    static func cells(_ row: some StringProtocol, count: Int) -> [String] {
        row.split(separator: "|", maxSplits: count, omittingEmptySubsequences: false)
            .dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
    }

    // MARK: - The configuration reference

    @Test func theConfigurationTableHasEverySettingWithItsDefault() throws {
        let reference = try Self.text("docs/configuration.md")
        let rows = reference.split(separator: "\n").filter { $0.hasPrefix("| `BLUELIBRARY_") }
        for option in ServeConfiguration.options {
            // The flag cell starts with the option's flag; a boolean may name its negation after
            // it ("`--seed`, `--no-seed`").
            let matching = rows.filter { $0.hasPrefix("| `\(option.variable)` | `\(option.flag)`") }
            #expect(matching.count == 1, "docs/configuration.md has \(matching.count) rows for \(option.variable) \(option.flag)")
            guard let row = matching.first else { continue }
            // The default cell says what `bluelibrary serve --help` says. A default that is a
            // value is written as code ("`8080`"); one that is prose ("none (SQLite)", "CPUs")
            // is written as the same prose, without backquotes. Both are compared exactly.
            let defaultCell = Self.cells(row, count: 4)[2]
            let isOneCodeSpan = defaultCell.hasPrefix("`") && defaultCell.hasSuffix("`")
                && defaultCell.dropFirst().dropLast().allSatisfy { $0 != "`" }
            if isOneCodeSpan {
                #expect(defaultCell == "`\(option.defaultText)`", "\(option.variable): the table's default \(defaultCell) is not `\(option.defaultText)`")
            } else {
                #expect(defaultCell == option.defaultText, "\(option.variable): the table's default '\(defaultCell)' is not '\(option.defaultText)'")
            }
        }
        #expect(reference.contains("| `BLUELIBRARY_HOST` | `--host` | `127.0.0.1` |"))
    }

    @Test func everyRowOfTheConfigurationTableIsAVariableTheServerReads() throws {
        let reference = try Self.text("docs/configuration.md")
        let rows = reference.split(separator: "\n").filter { $0.hasPrefix("| `BLUELIBRARY_") }
        #expect(rows.count >= ServeConfiguration.options.count)
        let optionVariables = Set(ServeConfiguration.options.map(\.variable))
        // The variables that are never a flag (secrets: the token and the database password)
        // are read from the environment by ServeConfiguration itself, by name.
        let source = try Self.text("Sources/BlueLibraryServer/ServeConfiguration.swift")
        var seen = Set<String>()
        for row in rows {
            let cells = Self.cells(row, count: 4)
            let variable = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            #expect(seen.insert(variable).inserted, "docs/configuration.md has two rows for \(variable)")
            if optionVariables.contains(variable) { continue }
            #expect(cells[1] == "none (never a flag)", "docs/configuration.md: \(variable) is no option of ServeConfiguration, yet its row names the flag \(cells[1])")
            #expect(source.contains("environment[\"\(variable)\"]"), "docs/configuration.md documents \(variable), which ServeConfiguration does not read")
        }
    }

    // MARK: - Links

    @Test func noLinkLeavesTheRepository() throws {
        for name in try ["CHANGELOG.md"] + Self.documents() {
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

    /// The relative targets of a document's links: markdown links and images (`](target)`) and
    /// HTML `src="..."`, outside code blocks, without their `#anchor`; in-page anchors and URLs
    /// with a scheme are left out.
    static func relativeLinks(in text: String) -> [String] {
        let prose = Self.prose(text)
        let targets = prose.matches(of: /\]\(([^)\s]+)(?:\s+"[^"]*")?\)/).map { String($0.1) }
            + prose.matches(of: /\bsrc="([^"]+)"/).map { String($0.1) }
        return targets.compactMap { target in
            if target.contains("://") || target.hasPrefix("mailto:") || target.hasPrefix("#") { return nil }
            return String(target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0])
        }
    }

    @Test func everyRelativeLinkPointsAtAFileThatExists() throws {
        #expect(Self.relativeLinks(in: "[a](docs/x.md#part) ![b](y.png) <img src=\"z.png\"> [c](#top) [d](https://example.org/)\n```\n[e](f.md)\n```\n")
            == ["docs/x.md", "y.png", "z.png"])
        var checked = 0
        for name in try Self.documents() {
            let directory = Self.root.appendingPathComponent(name).deletingLastPathComponent()
            for link in Self.relativeLinks(in: try Self.text(name)) {
                let target = directory.appendingPathComponent(link.removingPercentEncoding ?? link).standardizedFileURL
                #expect(FileManager.default.fileExists(atPath: target.path), "\(name) links to \(link), which does not exist")
                checked += 1
            }
        }
        #expect(checked > 20, "only \(checked) relative links found: the link pattern no longer matches")
    }

    @Test func theReadmeLinksToEveryGuide() throws {
        let links = Set(Self.relativeLinks(in: try Self.text("README.md")))
        for guide in try Self.guides() {
            #expect(links.contains(guide), "README.md has no link to \(guide)")
        }
    }

    // MARK: - No history in the documents

    /// Citations of tracker numbers: the word "issue" or "issues" (with or without `#`) or
    /// "defect" followed by a number, or `#` and a number after a space or an opening
    /// parenthesis (the samples in `noDocumentCitesAnIssueNumber`). Not `#` followed by a word
    /// (an anchor such as `#section`, `#filePath`) and not `#` then a space and digits (a shell
    /// comment in a code example); a hex colour like `#123abc` is not one either (the digits
    /// must end the word).
    static func issueCitations(in text: String) -> [String] {
        let words = text.matches(of: /(?i)\b(issues?|defects?)\s+#?\d+\b/).map { String($0.0) }
        let hashes = text.matches(of: /(?:^|[\s(\[,;])#\d+\b/.anchorsMatchLineEndings()).map { String($0.0) }
        return words + hashes
    }

    @Test func noDocumentCitesAnIssueNumber() throws {
        // The pattern finds what it is meant to, and leaves the rest.
        for cited in ["see issue 27", "Issue #12", "issues 11", "defect 4", "(#9)", "fixed, #13.", "#14 at the start"] {
            #expect(!Self.issueCitations(in: cited).isEmpty, "the pattern misses \(cited)")
        }
        #expect(Self.issueCitations(in: "an anchor [x](#libraries), `#filePath`, colour #123abc, # 201; 409 if taken, a0#1").isEmpty)
        // CHANGELOG.md records history by design and is not among the documents.
        for name in try Self.documents() {
            for (number, line) in try Self.text(name).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let citations = Self.issueCitations(in: String(line))
                #expect(citations.isEmpty, "\(name):\(number + 1) cites \(citations): say what the code does instead")
            }
        }
    }

    // MARK: - The README

    @Test func theFilesTheReadmeNamesArePresentAndTheLicenseIsTheContractsOne() throws {
        let readme = try Self.text("README.md")
        for name in ["LICENSE", "CHANGELOG.md", "docs/BENCHMARKS.md", "deploy/nginx.conf.example"] {
            #expect(readme.contains("`\(name)`"), "README does not name \(name)")
            #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(name).path), "\(name) is missing")
        }
        #expect(readme.contains("\n## License\n"))
        let spec = String(decoding: try SystemRoutes.loadSpec(), as: UTF8.self)
        #expect(spec.contains("  license:\n    name: MIT\n"))
        #expect(try Self.text("LICENSE").hasPrefix("MIT License"))
        // The TLS server block of the nginx example is there to be switched on.
        #expect(try Self.text("deploy/nginx.conf.example").contains("#     listen 443 ssl"))
    }
}
