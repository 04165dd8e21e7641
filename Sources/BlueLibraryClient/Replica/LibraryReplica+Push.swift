import Foundation

/// Push: the outbox, oldest first, with retries (rules in `LibraryReplica`'s note).
extension LibraryReplica {
    /// What the server did with one outbox entry.
    enum PushOutcome {
        /// Applied; for an add, the server's album (its id replaces the local one).
        case applied(AlbumResource?)
        /// Not applied, by the conflict rules; the reason is reported.
        case dropped(String)
    }

    /// Sends every queued mutation in order. Throws (keeping the entry that failed and all
    /// after it) when the server stays unreachable or answers an error no rule covers.
    @discardableResult
    public func push() async throws(ReplicaError) -> SyncReport {
        try begin()
        defer { syncing = false }
        return try await pushOutbox()
    }

    func pushOutbox() async throws(ReplicaError) -> SyncReport {
        var report = SyncReport()
        resolvedAdds = (0, 0)
        while let entry = try storage({ try store.first() }) {
            let outcome = try await send(entry)
            try storage {
                try store.db.transaction(.immediate) { _ in
                    switch outcome {
                    case let .applied(album):
                        report.pushed += 1
                        if let album, case let .add(localID, _, _, _) = entry.operation {
                            try store.rename(.local, from: localID, to: album.id)
                            try store.replaceFields(.local, album)
                            try store.renameInOutbox(from: localID, to: album.id)
                        }
                    case let .dropped(reason):
                        report.dropped.append(DroppedOperation(operation: entry.operation, reason: reason))
                    }
                    try store.removeFromOutbox(entry.seq)
                }
            }
        }
        if !report.dropped.isEmpty { try rebuildLocal() }
        report.version = try version()
        report.adoptedAdds = resolvedAdds.adopted
        report.resentAdds = resolvedAdds.resent
        return report
    }

    /// One entry, with retries; an add whose key stays held by an interrupted request is
    /// resolved once `interruptedKeyGrace` has passed (see `resolveInterruptedAdd`).
    private func send(_ entry: OutboxEntry) async throws(ReplicaError) -> PushOutcome {
        do {
            return try await sendWithRetries(entry)
        } catch where Self.isKeyInProgress(error) {
            guard case let .add(_, input, _, _) = entry.operation else { throw .client(error) }
            let since = entry.blockedSince ?? Date()
            if entry.blockedSince == nil { try storage { try store.setBlocked(entry.seq, since: since) } }
            let grace = Double(interruptedKeyGrace.components.seconds) + Double(interruptedKeyGrace.components.attoseconds) / 1e18
            guard Date().timeIntervalSince(since) >= grace else {
                throw .interruptedAdd(title: input.title, decidedAfter: since.addingTimeInterval(grace))
            }
            return try await resolveInterruptedAdd(entry, input: input)
        } catch {
            throw .client(error)
        }
    }

    private func sendWithRetries(_ entry: OutboxEntry) async throws(BlueLibraryClientError) -> PushOutcome {
        try await retrying { () async throws(BlueLibraryClientError) -> PushOutcome in
            try? self.store.countAttempt(entry.seq)
            return try await self.attempt(entry.operation, key: entry.idempotencyKey)
        }
    }

    /// An add whose Idempotency-Key the server holds for a request that never finished (its
    /// instance died, or lost the database, between taking the key and recording the answer:
    /// 409 until the key expires, 24 hours). Whether it took effect is decided from the server's
    /// list: an album the replica does not know, with exactly the add's fields, is taken as its
    /// result (adopted, as if answered); with none, the add did not happen and is sent again
    /// under a new key. Trade-offs, chosen over a queue blocked for a day: an identical album
    /// that another client added meanwhile is taken for this one (one album where two were
    /// meant), and an add that took effect and was deleted by another client since is added again.
    private func resolveInterruptedAdd(_ entry: OutboxEntry, input: AlbumInput) async throws(ReplicaError) -> PushOutcome {
        if let album = try await findUnknownAlbum(matching: input) {
            resolvedAdds.adopted += 1
            return .applied(album)
        }
        var fresh = entry
        fresh.idempotencyKey = UUID().uuidString
        try storage { try store.rekey(entry.seq, to: fresh.idempotencyKey) }
        resolvedAdds.resent += 1
        do {
            return try await sendWithRetries(fresh)
        } catch {
            throw .client(error)
        }
    }

    /// The first album in the server's list that the replica does not hold, with `input`'s fields.
    private func findUnknownAlbum(matching input: AlbumInput) async throws(ReplicaError) -> AlbumResource? {
        var query = AlbumPageQuery(limit: 500)
        while true {
            let page = try await serverPage(query)
            for album in page.items
            where album.title == input.title && album.artist == input.artist && album.genre == (input.genre ?? "Pop")
                && album.year == input.year && album.coverUrl == input.coverUrl
            {
                if try !storage({ try store.knows(album.id) }) { return album }
            }
            guard let next = page.next else { return nil }
            query = query.continuing(at: next)
        }
    }

    static func isKeyInProgress(_ error: BlueLibraryClientError) -> Bool {
        error.status == 409 && (error.problem?.type.hasSuffix("idempotency-key-in-progress") ?? false)
    }

    /// One request for `operation`, its conflicts decided; errors no rule covers are thrown.
    private func attempt(_ operation: ReplicaOperation, key: String) async throws(BlueLibraryClientError) -> PushOutcome {
        let library = self.library
        if case .add = operation {} else if operation.albumID.hasPrefix(Self.localPrefix) {
            return .dropped("its album's add was dropped, so the album never reached the server")
        }
        do {
            switch operation {
            case let .add(_, input, index, _):
                return .applied(try await client.add(input, at: index, in: .library(library), idempotencyKey: key))
            case let .delete(id):
                _ = try await client.delete(id: id, in: library)
                return .applied(nil)
            case let .move(id, index):
                do {
                    _ = try await client.move(id: id, to: index, in: library)
                } catch where error.status == 422 {
                    // The target is past the end of the server's list now: the last index.
                    let total = try await client.list(AlbumPageQuery(limit: 1, count: true), in: .library(library)).total ?? 0
                    _ = try await client.move(id: id, to: max(0, total - 1), in: library)
                }
                return .applied(nil)
            case let .update(id, patch):
                _ = try await client.update(id: id, patch, in: library)
                return .applied(nil)
            }
        } catch where error.isAccessRefusal {
            // 401/429 say nothing about the change, only about the token: keep it queued.
            throw error
        } catch where error.status == 404 {
            if case .delete = operation { return .applied(nil) }  // already deleted on the server: a no-op
            return .dropped("album \(operation.albumID) was deleted on the server")
        } catch let error where error.status.map({ (400..<500).contains($0) && !Self.isRetryable(error) }) ?? false {
            return .dropped(error.description)
        }
    }

    static let localPrefix = "local-"

    /// Runs `request`, retrying failures that may pass (transport, timeout, 408, 409 from an
    /// idempotency key in progress, 5xx) with exponential backoff; keeps `isOnline`. A 401 or
    /// 429 is thrown at once: only another token, or waiting out the lockout (longer than the
    /// retries take), helps.
    func retrying<T>(_ request: () async throws(BlueLibraryClientError) -> T) async throws(BlueLibraryClientError) -> T {
        var delay = retryDelay
        var attempt = 1
        while true {
            do {
                let value = try await request()
                setReachable(true)
                return value
            } catch {
                let answered = error.status != nil
                setReachable(answered)
                guard Self.isRetryable(error), attempt < maxAttempts else { throw error }
                attempt += 1
                do {
                    try await Task.sleep(for: delay)
                } catch {
                    throw .cancelled
                }
                delay *= 2
            }
        }
    }

    static func isRetryable(_ error: BlueLibraryClientError) -> Bool {
        switch error {
        case .transport, .timeout: return true
        case .cancelled, .decoding, .invalidRequest, .replica, .unauthorized, .tooManyRequests: return false
        case let .problem(problem):
            switch problem.status {
            case 408, 500, 502, 503, 504: return true
            case 409: return problem.type.hasSuffix("idempotency-key-in-progress")
            default: return false
            }
        }
    }
}
