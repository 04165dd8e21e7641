import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// The web app in a real browser: headless Chromium (Debian `chromium`, `chromium-driver`)
/// driven by Selenium (PyPI, pinned in scripts/test) through `scripts/app-browser-test.py`,
/// against a real `bluelibrary serve` process behind a real nginx that mounts it under
/// `/music/`. Every step of the script must pass: the five albums appear (128-px thumbnails);
/// the event-stream parser on awkward chunks; keyboard selection and tab order; delete then
/// undo behind the token prompt; several albums deleted, then moved to another library, in one
/// batch each (a refused one reported) and undone in one step; libraries created, renamed and
/// deleted (the 409 explained, then forced) from the Libraries dialog; views created (a 422 beside
/// the libraries first), renamed, given other libraries and deleted from the same dialog; a CSV
/// imported (its bad rows listed first, then 2,000 albums with the upload's progress bar), exported
/// as CSV and archive with the download's progress, an archive imported after its confirm; list
/// view rows dragged to reorder; every control named in Chromium's accessibility tree; add with a validation error, then at a position; a failed
/// cover shows the album's monogram (the reason only in its tooltip and description), is asked
/// for once more when it comes back into view, never in a loop; edit in place (F2, field errors,
/// a new cover shown after saving, a 412 that shows the current values and overwrites nothing);
/// Alt+arrows and a drag and drop move an album, one move request per press or drop, and Undo
/// restores the order;
/// reload restores the selection; a second window sees a change made in the first and one made with
/// curl, and a cover given and then changed elsewhere (new bytes at the same thumbnail URL);
/// the library/view switcher, infinite scroll over 120 distinct albums (the cover strip virtualised), the view's outdated
/// banner, and fast switching (only the last choice opens, with one event stream); the list
/// view (remembered, virtualised, sorted by the server, keyboard selection); a dropped
/// event stream resumes with Last-Event-ID and revalidates with If-None-Match; events are
/// merged in order (an added-then-deleted album does not come back); a replaced library (PUT
/// /archive) is shown without a reload; a lowered paging.maxLimit is followed; phone width,
/// dark mode and text contrast; a read key hides Edit, Add, Delete and Undo and the header names it,
/// and the header's key button takes a key that may write; reads protected while a tab is live (its stream's 401 brings
/// the token prompt), protected reads in a fresh tab, the 429 lock-out message on a request
/// and on the stream; no request outside the prefix and no console errors.
///
/// Screenshots go to `.build/screenshots/app/` (or `$BLUELIBRARY_SCREENSHOTS`).
@Suite(.timeLimit(.minutes(3)), .ownThreads) struct WebAppBrowserTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

    /// Names what is missing for the browser test (scripts/test installs it), or nil.
    static func missingPrerequisite() -> String? {
        for path in ["/usr/bin/chromium", "/usr/bin/chromedriver"] where !FileManager.default.isExecutableFile(atPath: path) {
            return "\(path) is missing: install the Debian packages chromium and chromium-driver (scripts/test does)"
        }
        let probe = try? ChildProcess.run("/usr/bin/env", ["python3", "-c", "import selenium"],
                                          environment: ProcessInfo.processInfo.environment)
        if probe?.status != 0 { return "the Python module selenium is missing: scripts/test installs the pinned version" }
        return nil
    }

    @Test func theAppWorksInChromium() throws {
        if let missing = Self.missingPrerequisite() {
            Issue.record(Comment(rawValue: missing))
            return
        }
        let token = "browser-test-token-8c1f"
        let server = try ServerProcess(
            arguments: ["--cover-allow", "127.0.0.1", "--access-log", "off"],
            environment: ["BLUELIBRARY_TOKEN": token], dataDirectory: TestApp.temporaryDirectory())
        defer { server.signal(SIGKILL) }
        // The browser sees the server under a path prefix, through nginx: the app's relative
        // URLs must keep every request below it.
        let nginx = try NginxProxy(upstreamPort: server.port, pathPrefix: "/music/")
        let screenshots = ProcessInfo.processInfo.environment["BLUELIBRARY_SCREENSHOTS"]
            ?? Self.root.appendingPathComponent(".build/screenshots/app").path
        let run = try ChildProcess.run(
            "/usr/bin/env",
            ["python3", Self.root.appendingPathComponent("scripts/app-browser-test.py").path,
             "--base", "http://127.0.0.1:\(server.port)", "--app-url", "http://127.0.0.1:\(nginx.port)/music",
             "--token", token, "--screenshots", screenshots],
            environment: ProcessInfo.processInfo.environment, mergeStderr: true)
        withExtendedLifetime(nginx) {}
        let output = String(decoding: run.stdout, as: UTF8.self)
        #expect(run.status == 0, "\(output)")
        #expect(!output.contains("FAIL"), "\(output)")
        // Every step reports itself; a step that was skipped would be missing here.
        let steps = output.split(separator: "\n").filter { $0.hasPrefix("ok ") }.count
        #expect(steps == 29, "\(output)")
    }
}
