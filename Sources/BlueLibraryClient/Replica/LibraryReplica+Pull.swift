import Foundation

/// Pull: the change feed applied to `base_albums`, full reloads, and the rebuild of `albums`
/// (rules in `LibraryReplica`'s note).
extension LibraryReplica {
    /// Brings `base_albums` to the server's current version and rebuilds `albums` from it and
    /// the outbox.
    @discardableResult
    public func pull() async throws(ReplicaError) -> SyncReport {
        try await begin()
        defer { syncing = false }
        return try await pullChanges()
    }

    func pullChanges() async throws(ReplicaError) -> SyncReport {
        if view != nil { return try await pullView() }
        var report = SyncReport()
        if try storage({ try store.meta("loaded") }) != "1" {
            try await reload()
            report.reloaded = true
        }
        var settled = false
        for _ in 0..<maxPullRounds {
            switch try await applyChangePages(&report) {
            case .reloadNeeded:
                try await reload()
                report.reloaded = true
                continue
            case .caughtUp:
                break
            }
            if try await fetchStale() {
                settled = true
                break
            }
        }
        if !settled {
            throw .unsettled("the server's library kept changing during \(maxPullRounds) pull rounds; sync again")
        }
        try rebuildLocal()
        report.version = try version()
        if report.pulledChanges > 0 || report.reloaded { announceUpdate(report.version) }
        return report
    }

    enum PageResult { case caughtUp, reloadNeeded }

    /// Applies change pages until `more` is false; `.reloadNeeded` on 410 or a `replaced` change.
    private func applyChangePages(_ report: inout SyncReport) async throws(ReplicaError) -> PageResult {
        while true {
            let since = try version()
            let library = self.library
            let page: ChangePageResource
            do {
                page = try await retrying { () async throws(BlueLibraryClientError) -> ChangePageResource in
                    try await self.client.changes(since: since, limit: 1000, in: library)
                }
            } catch where error.status == 410 {
                return .reloadNeeded
            } catch {
                throw .client(error)
            }
            let replaced = try storage {
                try store.db.transaction(.immediate) { _ -> Bool in
                    var order = try store.order(.base)
                    for change in page.changes {
                        guard try apply(change, order: &order) else { return true }
                    }
                    try store.setMeta("version", String(page.next))
                    return false
                }
            }
            if replaced { return .reloadNeeded }
            report.pulledChanges += page.changes.count
            if !page.more { return .caughtUp }
        }
    }

    /// One change on `base_albums`; false for `replaced` (reload everything).
    private func apply(_ change: ChangeResource, order: inout ListOrder) throws -> Bool {
        guard let id = change.id else { return change.kind != "replaced" }
        switch change.kind {
        case "added":
            let placeholder = AlbumResource(id: id, title: "", artist: "", createdAt: "", updatedAt: "")
            try store.remove(.base, id: id, order: &order)
            try store.insert(.base, placeholder, at: change.index, stale: true, order: &order)
        case "deleted":
            try store.remove(.base, id: id, order: &order)
        case "moved":
            if let index = change.index { try store.move(.base, id: id, to: index, order: &order) }
        case "updated":
            try store.markStale(.base, id: id)
        case "replaced":
            return false
        default:
            throw ReplicaError.unsettled("the change feed sent an unknown kind of change, \(change.kind); reload the replica")
        }
        return true
    }

    /// Fetches the fields of every stale album; false when one is gone already (more changes
    /// came in since the page: another round is needed).
    private func fetchStale() async throws(ReplicaError) -> Bool {
        let library = self.library
        let stale = try storage { try store.staleIDs(.base) }
        if stale.count > staleFetchLimit { return try await fetchStaleByPages(Set(stale)) }
        for id in stale {
            let album: AlbumResource
            do {
                album = try await retrying { () async throws(BlueLibraryClientError) -> AlbumResource in
                    try await self.client.album(id: id, in: library)
                }
            } catch where error.status == 404 {
                return false
            } catch {
                throw .client(error)
            }
            try storage { _ = try store.replaceFields(.base, album) }
        }
        return true
    }

    /// One page of the server's list of this library (or view), retried as every pull request is.
    func serverPage(_ query: AlbumPageQuery) async throws(ReplicaError) -> AlbumPage {
        let source = view.map(AlbumListSource.view) ?? .library(library)
        do {
            return try await retrying { () async throws(BlueLibraryClientError) -> AlbumPage in
                try await self.client.list(query, in: source)
            }
        } catch {
            throw .client(error)
        }
    }

    /// Many stale albums: their fields from a walk through the paged list (one request per
    /// 500 albums instead of one per album); false when one is no longer on the server.
    private func fetchStaleByPages(_ stale: Set<String>) async throws(ReplicaError) -> Bool {
        var query = AlbumPageQuery(limit: 500)
        var found = 0
        while true {
            let page = try await serverPage(query)
            let fresh = page.items.filter { stale.contains($0.id) }
            try storage {
                try store.db.transaction(.immediate) { _ in
                    for album in fresh { _ = try store.replaceFields(.base, album) }
                }
            }
            found += fresh.count
            guard let next = page.next else { break }
            query = query.continuing(at: next)
        }
        return found == stale.count
    }

    /// Replaces `base_albums` with the server's list through the paged list, taken again
    /// until its first and last page were read at the same version (one state of the server).
    func reload() async throws(ReplicaError) {
        for _ in 0..<maxPullRounds {
            var query = AlbumPageQuery(limit: 500)
            var albums: [AlbumResource] = []
            var versions: (first: Int64, last: Int64)?
            while true {
                let page = try await serverPage(query)
                versions = (versions?.first ?? page.version, page.version)
                albums += page.items
                guard let next = page.next else { break }
                query = query.continuing(at: next)
            }
            guard let versions, versions.first == versions.last else { continue }
            try storage {
                try store.db.transaction(.immediate) { _ in
                    try store.replaceBase(with: albums)
                    try store.setMeta("version", String(versions.last))
                    try store.setMeta("loaded", "1")
                }
            }
            return
        }
        throw .unsettled("the server's library kept changing during \(maxPullRounds) reloads; sync again")
    }

    /// `albums` becomes `base_albums` with the outbox replayed on it: a delete or move of an
    /// album not there is skipped, a patch of one not there too (push reports those).
    func rebuildLocal() throws(ReplicaError) {
        try storage {
            try store.db.transaction(.immediate) { _ in
                try store.copyBaseToLocal()
                let outbox = try store.outbox()
                guard !outbox.isEmpty else { return }
                var order = try store.order(.local)
                for entry in outbox {
                    switch entry.operation {
                    case let .add(localID, input, index, createdAt):
                        try store.insert(.local, ReplicaOperation.localAlbum(id: localID, input: input, createdAt: createdAt), at: index,
                                         order: &order)
                    case let .delete(id):
                        try store.remove(.local, id: id, order: &order)
                    case let .move(id, index):
                        try store.move(.local, id: id, to: index, order: &order)
                    case let .update(id, patch):
                        if let album = try store.album(.local, id: id) { try store.replaceFields(.local, patch.applied(to: album)) }
                    }
                }
            }
        }
    }
}
