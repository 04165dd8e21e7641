import Foundation
import HTTPTestSupport

/// Reads a library's order and its change feed over HTTP (on fresh connections), and
/// replays a feed: what the tests compare the acknowledged writes with.
enum LibraryProbe {
    /// One entry of `GET /changes`.
    struct Change: Equatable, CustomStringConvertible {
        var version: Int64
        var kind: String
        var id: String?
        var index: Int?
        var description: String { "v\(version) \(kind) \(id ?? "-")@\(index.map(String.init) ?? "-")" }
    }

    struct ProbeError: Error, CustomStringConvertible {
        let description: String
    }

    /// The default library's album ids in order and the version they were read at, from one
    /// page (one snapshot): the library must hold at most 500 albums.
    static func snapshot(port: Int) throws -> (ids: [String], version: Int64) {
        let response = try RawHTTPClient.request(port: port, path: "/albums?limit=500")
        guard response.status == 200, let page = try? response.json(), let items = page["items"] as? [[String: Any]],
            let version = page["version"] as? Int
        else { throw ProbeError(description: "GET /albums?limit=500 answered \(response.status): \(response.text.prefix(300))") }
        guard page["next"] == nil || page["next"] is NSNull else {
            throw ProbeError(description: "more than 500 albums; snapshot reads one page")
        }
        return (try items.map { item in
            guard let id = item["id"] as? String else { throw ProbeError(description: "an item without id") }
            return id
        }, Int64(version))
    }

    /// Every album id of the default library in order, page by page (cursors keep a walk
    /// exact while the library changes; the tests read it when nothing writes).
    static func allIDs(port: Int) throws -> [String] {
        var ids: [String] = []
        var path = "/albums?limit=500"
        while true {
            let response = try RawHTTPClient.request(port: port, path: path, receiveTimeout: 30)
            guard response.status == 200, let page = try? response.json(), let items = page["items"] as? [[String: Any]] else {
                throw ProbeError(description: "GET \(path) answered \(response.status): \(response.text.prefix(300))")
            }
            ids += items.compactMap { $0["id"] as? String }
            guard let next = page["next"] as? String else { return ids }
            path = "/albums?limit=500&cursor=" + (next.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? next)
        }
    }

    /// Every change after `since`, oldest first (following `next` while `more`), of the default
    /// library or of the one whose routes start with `prefix` (`/libraries/<id>`).
    static func changes(port: Int, since: Int64 = 0, prefix: String = "") throws -> [Change] {
        var since = since
        var all: [Change] = []
        while true {
            let response = try RawHTTPClient.request(port: port, path: "\(prefix)/changes?since=\(since)&limit=1000")
            guard response.status == 200, let page = try? response.json(), let entries = page["changes"] as? [[String: Any]],
                let next = page["next"] as? Int
            else { throw ProbeError(description: "GET /changes?since=\(since) answered \(response.status): \(response.text.prefix(300))") }
            for entry in entries {
                guard let version = entry["version"] as? Int, let kind = entry["kind"] as? String else {
                    throw ProbeError(description: "a change without version or kind: \(entry)")
                }
                all.append(Change(version: Int64(version), kind: kind, id: entry["id"] as? String, index: entry["index"] as? Int))
            }
            since = Int64(next)
            if page["more"] as? Bool != true { return all }
        }
    }

    /// Applies `changes` to `ids` as a client of the feed would; returns the order it ends
    /// with and every way the feed did not fit (a delete or move of an album that is not at
    /// the index the feed names, an add past the end, a `replaced`).
    static func replay(_ changes: [Change], on ids: [String]) -> (ids: [String], misfits: [String]) {
        var ids = ids
        var misfits: [String] = []
        for change in changes {
            guard let id = change.id, let index = change.index else {
                misfits.append("\(change): no id or index")
                continue
            }
            switch change.kind {
            case "added":
                guard index <= ids.count, !ids.contains(id) else {
                    misfits.append("\(change): past the end (\(ids.count)) or already there")
                    continue
                }
                ids.insert(id, at: index)
            case "deleted":
                guard ids.indices.contains(index), ids[index] == id else {
                    misfits.append("\(change): not at that index")
                    ids.removeAll { $0 == id }
                    continue
                }
                ids.remove(at: index)
            case "moved":
                guard let from = ids.firstIndex(of: id) else {
                    misfits.append("\(change): not in the library")
                    continue
                }
                ids.remove(at: from)
                guard index <= ids.count else {
                    misfits.append("\(change): past the end")
                    ids.append(id)
                    continue
                }
                ids.insert(id, at: index)
            case "updated":
                if !(ids.indices.contains(index) && ids[index] == id) { misfits.append("\(change): not at that index") }
            default:
                misfits.append("\(change): unexpected kind")
            }
        }
        return (ids, misfits)
    }
}
