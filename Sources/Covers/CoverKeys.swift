import Library
import Synchronization

/// The cache keys of the cover URLs asked for lately (`CoverURL(url).description`, the URL in
/// its one spelling): parsing and checking a URL was a third of the work of answering a cached
/// cover from memory, and a library asks for the same few hundred URLs again and again.
/// Bounded: past ``capacity`` URLs it starts over. A URL that does not parse is not kept.
final class CoverKeys: Sendable {
    static let capacity = 4096
    private let keys = Mutex<[String: String]>([:])

    /// URLs remembered now (at most ``capacity``).
    var count: Int { keys.withLock { $0.count } }

    /// The key of `url`. - Throws: `CoverError` `invalidURL`, as ``CoverURL/init(_:)``.
    func key(_ url: String) throws(CoverError) -> String {
        if let known = keys.withLock({ $0[url] }) { return known }
        let key = try CoverURL(url).description
        keys.withLock { keys in
            if keys.count >= Self.capacity { keys.removeAll(keepingCapacity: true) }
            keys[url] = key
        }
        return key
    }
}
