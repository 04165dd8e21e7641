import Dispatch
import Foundation
import TestThreads
import Testing

@Suite(.ownThreads) struct OwnThreadsTests {
    /// More blocked bodies than the machine has cores wait for each other at a barrier: on the
    /// cooperative pool (one thread per core) the last ones would never start and the barrier
    /// would time out.
    @Test func blockedChildTasksDoNotWaitForEachOther() async {
        let count = ProcessInfo.processInfo.activeProcessorCount * 4
        let barrier = Barrier(count: count)
        let allArrived = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask { barrier.arriveAndWait(timeout: .seconds(20)) }
            }
            return await group.allSatisfy { $0 }
        }
        #expect(allArrived)
    }

    @Test func aSynchronousBodyRunsOffThePool() {
        #expect(OwnThreadsExecutor.isCurrentThreadOwn)
    }

    @Test func anAsynchronousBodyRunsOffThePool() async {
        #expect(isCurrentThreadOwn())
        await Task.yield()
        #expect(isCurrentThreadOwn())
    }
}

/// Off the async context, where `Thread.current` is not available.
private func isCurrentThreadOwn() -> Bool { OwnThreadsExecutor.isCurrentThreadOwn }

/// `count` threads meet: each one arrives and waits until all have, or until `timeout`.
private final class Barrier: @unchecked Sendable {
    private let condition = NSCondition()
    private var arrived = 0
    private let count: Int

    init(count: Int) { self.count = count }

    func arriveAndWait(timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds))
        condition.lock()
        defer { condition.unlock() }
        arrived += 1
        condition.broadcast()
        while arrived < count {
            if !condition.wait(until: deadline) { return arrived >= count }
        }
        return true
    }
}

/// Every `@Suite` in the package's tests has `.ownThreads`, so no test body blocks the
/// cooperative pool. Reads the sources next to this file.
@Suite(.ownThreads) struct EveryTestSuiteRunsOnItsOwnThreads {
    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    @Test func everySuiteHasTheTrait() throws {
        var suites = 0
        var missing: [String] = []
        let files = try #require(FileManager.default.enumerator(atPath: Self.testsDirectory.path))
        // This file's own examples of the attribute are test data; its two suites have the trait.
        for case let file as String in files where file.hasSuffix(".swift") && !#filePath.hasSuffix("/" + file) {
            let text = try String(contentsOf: Self.testsDirectory.appendingPathComponent(file), encoding: .utf8)
            for (line, attribute) in SuiteAttributes.find(in: text) {
                suites += 1
                if !attribute.contains(".ownThreads") { missing.append("\(file):\(line): \(attribute)") }
            }
        }
        #expect(suites > 100, "the scan found \(suites) suites: is \(Self.testsDirectory.path) the Tests directory?")
        #expect(missing.isEmpty, "suites without .ownThreads:\n\(missing.joined(separator: "\n"))")
    }

    @Test func theScanSeesEveryFormOfTheAttribute() {
        let text = """
            @Suite struct A {}
            /// @Suite struct InAComment {}
            @Suite("B, (with) parentheses", .serialized, .ownThreads) struct B {}
            @Suite(.timeLimit(.minutes(1)))
            final class C {}
            """
        #expect(SuiteAttributes.find(in: text).map(\.attribute) == [
            "@Suite",
            #"@Suite("B, (with) parentheses", .serialized, .ownThreads)"#,
            "@Suite(.timeLimit(.minutes(1)))",
        ])
    }
}

/// The `@Suite` attributes of a Swift source, with their arguments, outside comments.
enum SuiteAttributes {
    static func find(in text: String) -> [(line: Int, attribute: String)] {
        var found: [(Int, String)] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard !line.trimmingCharacters(in: .whitespaces).hasPrefix("//"), line.contains("@Suite") else { continue }
            var rest = line[line.range(of: "@Suite")!.upperBound...]
            guard rest.first == "(" else {
                found.append((number + 1, "@Suite"))
                continue
            }
            // The arguments up to the matching parenthesis, skipping string literals.
            var depth = 0
            var inString = false
            var end = rest.startIndex
            for index in rest.indices {
                let character = rest[index]
                if inString {
                    if character == "\"" { inString = false }
                } else if character == "\"" {
                    inString = true
                } else if character == "(" {
                    depth += 1
                } else if character == ")" {
                    depth -= 1
                    if depth == 0 {
                        end = rest.index(after: index)
                        break
                    }
                }
            }
            rest = rest[..<end]
            found.append((number + 1, "@Suite" + rest))
        }
        return found
    }
}
