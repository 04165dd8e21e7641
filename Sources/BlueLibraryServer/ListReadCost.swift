import HTTPServer

/// The cost class of an uncached list read (`GET /albums`, `GET /libraries/{lib}/albums`,
/// `GET /views/{view}/albums`), told from its query alone on the event loop (no parsing
/// beyond the query items, no database): the server runs a **cheap** read on its general
/// workers, never queued behind the read lane, and an **expensive** one in the read lane
/// (``ReadAdmission``: bounded threads at a lower priority, a bounded queue, a limit per
/// client address).
///
/// A read is cheap when its cost is bounded by its shape, whatever the data:
/// - no `q` (a text filter scans: no index serves it),
/// - no `artist`, `genre`, `yearFrom` or `yearTo` (no index serves a filter, so a page of a
///   rare value walks the whole order to fill itself),
/// - no `count` other than `count=false` (a filtered total counts every match; the
///   unfiltered one is cheap, but a count is not what a cheap page needs),
/// - and no `offset`, or one of at most ``maxCheapOffset`` (albums) or ``maxCheapViewOffset``
///   (views): the position order jumps there by bucket sizes, each value sort (`title`,
///   `artist`, `year`, `createdAt`, either direction) walks its index that far, a view does so
///   in each source. A `cursor` resumes by seeking (position or sort index), so it is cheap.
///
/// Anything else is expensive, including a value the route would refuse (an unparsable
/// `offset`: its 400 is cheap either way, and the lane is the safe side). `sort`, `limit`
/// (at most `maxLimit`) and `pretty` do not change the class. A parameter given twice counts
/// with its first value, as the route reads it.
enum ListReadCost {
    /// The deepest `offset` of a cheap album-list read: twice the largest `maxLimit`.
    static let maxCheapOffset = 1_000
    /// The deepest `offset` of a cheap view read (it walks that far in every source).
    static let maxCheapViewOffset = 500

    /// The query parameters whose presence alone makes a read expensive (filters).
    static let filterParameters: Set<String> = ["q", "artist", "genre", "yearFrom", "yearTo"]

    /// Whether an album-list read of `request` is expensive (the read lane).
    static func isExpensiveAlbumList(_ request: HTTPRequest) -> Bool {
        isExpensive(request, maxOffset: maxCheapOffset)
    }

    /// Whether a view read of `request` is expensive (the read lane).
    static func isExpensiveViewList(_ request: HTTPRequest) -> Bool {
        isExpensive(request, maxOffset: maxCheapViewOffset)
    }

    static func isExpensive(_ request: HTTPRequest, maxOffset: Int) -> Bool {
        guard request.rawQuery != nil else { return false }
        var seen: Set<String> = []
        for item in request.queryItems where seen.insert(item.name).inserted {
            if filterParameters.contains(item.name) {
                // `q=` (empty) is no filter, as the route reads it; other filters count as given.
                if item.name != "q" || !item.value.isEmpty { return true }
            } else if item.name == "count" {
                if item.value != "false" { return true }
            } else if item.name == "offset" {
                guard let offset = QueryParameters.decimal(item.value), offset >= 0, offset <= maxOffset else { return true }
            }
        }
        return false
    }
}
