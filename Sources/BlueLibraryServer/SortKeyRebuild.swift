import BlueLibraryAPI
import Essentials
import Library

/// Keeps every library's artist sort keys made with the `sorting.ignoredArticles` setting: a
/// thread of its own compares each live library's articles (`LibraryFacade.sortArticles`)
/// with the setting's, and remakes the keys of a library that differs
/// (`LibraryFacade.setSortArticles`: one transaction per library, so a page reads either the
/// old keys or the new ones, never a mix, and a remade library's version goes up with a
/// `replaced` change).
///
/// It runs a pass at start, when woken (a settings change, a library created), and every
/// `interval` (a library created or a setting changed by another instance sharing the
/// database). A pass over libraries already in step reads one row each and writes nothing;
/// instances that race to remake one library serialise on its write, and the later finds
/// nothing to do. A failed pass is logged and tried again at the next.
final class SortKeyRebuild: Service {
    let serviceName = "sort-keys"
    private let loop: BackgroundLoop
    private let libraries: Libraries
    private let articles: @Sendable () -> SortArticles
    private let logger: JSONLogger

    init(libraries: Libraries, articles: @escaping @Sendable () -> SortArticles, interval: Duration = .seconds(60),
         clock: any MonotonicClock = SystemClock(), logger: JSONLogger) {
        loop = BackgroundLoop(name: serviceName, interval: interval, clock: clock)
        self.libraries = libraries
        self.articles = articles
        self.logger = logger
    }

    func start() {
        // Weakly: the loop's thread may end a moment after `stop()` returns, and must not keep
        // the libraries (and their store) of an app that shut down.
        loop.start { [weak self] in { self?.pass() } }
        loop.wake()
    }

    /// A pass soon (after the one under way).
    func wake() { loop.wake() }

    /// Waits until a pass that began after this call has finished (false when `timeout` ran
    /// out first, or the service is not running): for tests that need the rebuild's effect.
    @discardableResult
    func passNow(timeout: Duration) -> Bool { loop.passNow(timeout: timeout) }

    func stop() { loop.stop() }

    private func pass() {
        let articles = articles()
        do {
            for record in try libraries.list() {
                let facade = try libraries.facade(record.id)
                guard try facade.sortArticles() != articles else { continue }
                let started = ContinuousClock.now
                let changed = try facade.setSortArticles(articles)
                logger.log(.info, "artist sort keys remade", [
                    ("library", .string(record.id.rawValue)), ("articles", .string(articles.description)),
                    ("keysChanged", .string(changed ? "yes" : "no")),
                    ("milliseconds", .int(Int((ContinuousClock.now - started) / .milliseconds(1)))),
                ])
            }
        } catch {
            logger.log(.error, "could not remake the artist sort keys; trying again later", [("error", .string(String(describing: error)))])
        }
    }
}
