import Foundation

/// A view's replica: read-only, brought up to date by reloading the view's list when its ETag
/// moved (rules in `LibraryReplica`'s note, "A view's replica").
extension LibraryReplica {
    /// Throws `.readOnly` on a view's replica: `what` is what was asked of it.
    func refuseWritesToAView(_ what: String) throws(ReplicaError) {
        if let view { throw .readOnly(view: view, what: what) }
    }

    /// The query of every page a view's replica reads: position order, the largest pages.
    private static let viewQuery = AlbumPageQuery(limit: 500)

    /// Asks for the view's first page with the ETag of the last load (one request, a 304 while
    /// nothing changed); when it moved, reloads the whole list and rebuilds `albums`.
    func pullView() async throws(ReplicaError) -> SyncReport {
        guard let view else { return SyncReport() }
        var report = SyncReport()
        // A file loaded before the sources' versions were kept reloads once, to keep them.
        let etag = try storage { try store.meta("loaded") == "1" && store.meta("sources") != nil ? try store.meta("etag") : nil }
        let first: Revalidated<AlbumPage>
        do {
            first = try await retrying { () async throws(BlueLibraryClientError) -> Revalidated<AlbumPage> in
                try await self.client.list(Self.viewQuery, in: .view(view), ifNoneMatch: etag)
            }
        } catch {
            throw .client(error)
        }
        if case let .modified(page) = first {
            try await reloadView(startingWith: page)
            try rebuildLocal()
            report.reloaded = true
        }
        report.version = try version()
        if report.reloaded { announceUpdate(report.version) }
        return report
    }

    /// Replaces `base_albums` with the view's list, taken again until its first and last pages
    /// were read at the same source versions (one state of every source); keeps the first
    /// page's ETag for the next pull and the sum of the source versions as `version`.
    private func reloadView(startingWith first: AlbumPage) async throws(ReplicaError) {
        var head: AlbumPage? = first
        for _ in 0..<maxPullRounds {
            var page: AlbumPage
            if let head { page = head } else { page = try await serverPage(Self.viewQuery) }
            head = nil
            let start = page
            var albums = page.items
            while let next = page.next {
                page = try await serverPage(Self.viewQuery.continuing(at: next))
                albums += page.items
            }
            guard Self.sourceVersions(start) == Self.sourceVersions(page) else { continue }
            let version = start.versions.map { $0.values.reduce(0, +) } ?? start.version
            try storage {
                try store.db.transaction(.immediate) { _ in
                    try store.replaceBase(with: albums, keepingLibrary: true)
                    try store.setMeta("version", String(version))
                    try store.setMeta("etag", start.etag ?? "")
                    try store.setMeta("sources", Self.vector(Self.sourceVersions(start)))
                    try store.setMeta("loaded", "1")
                }
            }
            return
        }
        throw .unsettled("the sources of view \(view ?? "") kept changing during \(maxPullRounds) reloads; sync again")
    }

    /// The versions a view's page was read at: each source's, or the one `version`.
    private static func sourceVersions(_ page: AlbumPage) -> [String: Int64] {
        page.versions ?? ["": page.version]
    }

    /// `[a: 12, b: 3]` as the multi-library event stream writes its ids: `a:12,b:3`.
    static func vector(_ versions: [String: Int64]) -> String {
        versions.filter { !$0.key.isEmpty }.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
    }

    /// `a:12,b:3` → `[a: 12, b: 3]`; parts that are not `library:version` are left out.
    static func parseVector(_ text: String) -> [String: Int64] {
        var versions: [String: Int64] = [:]
        for part in text.split(separator: ",") {
            let pieces = part.split(separator: ":", maxSplits: 1)
            guard pieces.count == 2, let version = Int64(pieces[1].trimmingCharacters(in: .whitespaces)) else { continue }
            versions[pieces[0].trimmingCharacters(in: .whitespaces)] = version
        }
        return versions
    }

    /// The source versions the replica's copy of the view was read at (`sources` in `meta`).
    func sourcesRead() throws(ReplicaError) -> [String: Int64] {
        Self.parseVector(try storage { try store.meta("sources") } ?? "")
    }
}
