import Foundation
import TestThreads
import Testing

/// The module table of docs/architecture.md says what Package.swift declares: the same modules,
/// and for each the same dependencies on our own targets, both ways. The test targets and the
/// tests' helper targets (under Tests/) are not in the table.
@Suite(.ownThreads) struct ArchitectureDocTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static func text(_ name: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(name), encoding: .utf8)
    }

    struct Target: Equatable {
        var name: String
        var kind: String
        var path: String?
        /// Every name in its `dependencies:` array, products of other packages left out.
        var dependencies: [String]
    }

    /// The text without `//` comments (outside string literals).
    static func withoutComments(_ source: String) -> String {
        source.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            var inString = false
            var previous: Character = " "
            for index in line.indices {
                let character = line[index]
                if character == "\"" { inString.toggle() }
                if !inString, character == "/", previous == "/" { return line[..<line.index(before: index)] }
                previous = character
            }
            return line
        }.joined(separator: "\n")
    }

    /// The index just past the bracket that closes the one at `open` (`(` or `[`), string
    /// literals skipped.
    static func closing(_ text: String, from open: String.Index) -> String.Index? {
        var depth = 0
        var inString = false
        var index = open
        while index < text.endIndex {
            let character = text[index]
            if character == "\"" { inString.toggle() }
            if !inString {
                if character == "(" || character == "[" { depth += 1 }
                if character == ")" || character == "]" {
                    depth -= 1
                    if depth == 0 { return text.index(after: index) }
                }
            }
            index = text.index(after: index)
        }
        return nil
    }

    /// The targets a manifest declares (`.target`, `.executableTarget`, `.systemLibrary`,
    /// `.testTarget`, each `(name: "...", dependencies: [...], path: "...")`).
    static func targets(inManifest manifest: String) -> [Target] {
        let text = withoutComments(manifest)
        var found: [Target] = []
        var position = text.startIndex
        while let match = text[position...].firstMatch(of: /\.(target|executableTarget|systemLibrary|testTarget)\(/) {
            let open = text.index(before: match.range.upperBound)
            guard let end = closing(text, from: open) else { break }
            let body = String(text[open..<end])
            position = end  // a `.target(name:)` inside a dependency list is not a declaration
            guard let name = body.firstMatch(of: /\bname:\s*"([^"]+)"/)?.1 else { continue }
            var dependencies: [String] = []
            if let list = body.firstMatch(of: /\bdependencies:\s*\[/) {
                let listOpen = body.index(before: list.range.upperBound)
                if let listEnd = closing(body, from: listOpen) {
                    var entries = String(body[listOpen..<listEnd])
                    // `.product(name: "X", package: "p")` is another package's: not ours.
                    entries.replace(/\.product\([^)]*\)/, with: "")
                    dependencies = entries.matches(of: /"([^"]+)"/).map { String($0.1) }
                }
            }
            let path = body.firstMatch(of: /\bpath:\s*"([^"]+)"/).map { String($0.1) }
            found.append(Target(name: String(name), kind: String(match.1), path: path, dependencies: dependencies))
        }
        return found
    }

    /// The modules of the product: every target but the tests and their helpers under Tests/,
    /// with its dependencies on other targets of this package.
    static func modules(inManifest manifest: String) -> [String: Set<String>] {
        let all = targets(inManifest: manifest)
        let names = Set(all.map(\.name))
        var modules: [String: Set<String>] = [:]
        for target in all where target.kind != "testTarget" && !(target.path ?? "").hasPrefix("Tests/") {
            modules[target.name] = Set(target.dependencies.filter(names.contains))
        }
        return modules
    }

    /// The rows of the table whose header is "| module | imports (ours) | what it is |": each
    /// module named in the first cell (several may share a row) with the names of the second
    /// ("none" for none).
    static func modules(inDocument document: String) -> [(module: String, imports: Set<String>)] {
        let lines = document.split(separator: "\n", omittingEmptySubsequences: false)
        guard let header = lines.firstIndex(where: { $0.hasPrefix("| module | imports (ours) |") }) else { return [] }
        var rows: [(String, Set<String>)] = []
        for line in lines[(header + 1)...] {
            guard line.hasPrefix("|") else { break }
            if line.hasPrefix("|---") { continue }
            let cells = line.split(separator: "|", maxSplits: 3, omittingEmptySubsequences: false).dropFirst()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            let imports = cells[1] == "none" ? Set<String>() : Set(cells[1].split(separator: ",").map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: " `"))
            })
            for module in cells[0].matches(of: /`([^`]+)`/) {
                rows.append((String(module.1), imports))
            }
        }
        return rows
    }

    @Test func theParsersReadWhatTheyAreGiven() {
        let manifest = """
            targets: [
                .systemLibrary(name: "CLib", pkgConfig: "lib", providers: [.apt(["lib-dev"])]),
                // .target(name: "Commented", dependencies: ["CLib"]),
                .target(name: "A", dependencies: ["CLib", .product(name: "Ext", package: "ext")]),
                .target(
                    name: "B",
                    dependencies: ["A", .target(name: "CLib")],
                    resources: [.copy("Resources/x")]
                ),
                .target(name: "Helper", dependencies: ["A"], path: "Tests/Helper"),
                .testTarget(name: "BTests", dependencies: ["B", "Helper"]),
            ]
            """
        #expect(Self.modules(inManifest: manifest) == ["CLib": [], "A": ["CLib"], "B": ["A", "CLib"]])
        let document = """
            | module | imports (ours) | what it is |
            |---|---|---|
            | `CLib`, `CLib2` | none | system | libraries |
            | `B` | A, CLib | the `B` module |

            | other | table |
            """
        let rows = Self.modules(inDocument: document)
        #expect(rows.map(\.module) == ["CLib", "CLib2", "B"])
        #expect(rows.map(\.imports) == [[], [], ["A", "CLib"]])
    }

    @Test func theModuleTableMatchesPackageSwift() throws {
        let declared = Self.modules(inManifest: try Self.text("Package.swift"))
        let documented = Self.modules(inDocument: try Self.text("docs/architecture.md"))
        #expect(declared.count > 10, "Package.swift was not read: \(declared.keys.sorted())")
        #expect(!documented.isEmpty, "docs/architecture.md has no module table")

        var seen = Set<String>()
        for row in documented {
            #expect(seen.insert(row.module).inserted, "docs/architecture.md lists \(row.module) twice")
            guard let dependencies = declared[row.module] else {
                Issue.record("docs/architecture.md lists \(row.module), which Package.swift does not declare")
                continue
            }
            #expect(row.imports == dependencies,
                    "\(row.module): docs/architecture.md says it imports \(row.imports.sorted()), Package.swift \(dependencies.sorted())")
        }
        for module in declared.keys.sorted() where !seen.contains(module) {
            Issue.record("Package.swift declares \(module), which docs/architecture.md's module table lacks")
        }
    }

    /// The storage seam: the server module sees the database through `Storage`'s types and
    /// protocols only. It imports neither database wrapper, and none of its string literals is
    /// SQL (a statement there would be a second place that knows the schema).
    @Test func theServerModuleWritesNoSQL() throws {
        let directory = Self.root.appendingPathComponent("Sources/BlueLibraryServer")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }
        #expect(files.count > 20, "the server's sources were found: \(files.count)")
        let sql = /"\s*(SELECT|INSERT|UPDATE|DELETE\s+FROM|CREATE|ALTER|DROP|LISTEN|NOTIFY|PRAGMA|BEGIN|COMMIT)\b/
        #expect(!"let q = \"SELECT 1\"".matches(of: sql).isEmpty, "the pattern finds a statement")
        for file in files.sorted() {
            let source = Self.withoutComments(try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8))
            for module in ["SQLite", "CSQLite", "Postgres", "CPostgres"] {
                #expect(!source.split(separator: "\n").contains("import \(module)"), "\(file) imports \(module)")
            }
            let statements = source.matches(of: sql).map { String($0.output.0) }
            #expect(statements.isEmpty, "\(file) writes SQL: \(statements)")
        }
    }
}
