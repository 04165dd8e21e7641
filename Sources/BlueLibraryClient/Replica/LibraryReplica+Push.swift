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
        try await begin()
        defer { syncing = false }
        return try await pushOutbox()
    }

    func pushOutbox() async throws(ReplicaError) -> SyncReport {
        var report = SyncReport()
        resolvedAdds = (0, 0)
        while let batch = try storage({ try store.nextPushBatch(limit: pushBatchSize) }) {
            let sent = try await send(batch)
            try storage {
                try store.db.transaction(.immediate) { _ in
                    for (entry, outcome) in sent.outcomes {
                        try record(outcome, of: entry, in: &report)
                    }
                    try advanceBase(with: sent)
                    try store.clearPushBatch()
                }
            }
        }
        if !report.dropped.isEmpty { try rebuildLocal() }
        report.version = try version()
        report.adoptedAdds = resolvedAdds.adopted
        report.resentAdds = resolvedAdds.resent
        return report
    }

    /// When the batch's changes are the very next versions after the base copy's (nothing of
    /// another client came in between), the base copy takes them from the answer, which holds
    /// each changed album with its index, and moves to the batch's last version: the pull after
    /// the push then asks only for what others changed. Otherwise (or if the base copy does not
    /// hold an album the answer changed) the base copy stays as it was, and the pull brings
    /// these changes through the change feed as any others.
    private func advanceBase(with sent: SentBatch) throws {
        guard let answer = sent.answer else { return }
        let changes = zip(sent.kinds, answer.results).filter { $0.1.version != nil }
        guard let base = Int64(try store.meta("version") ?? ""), !changes.isEmpty,
            changes.enumerated().allSatisfy({ $0.element.1.version == base + 1 + Int64($0.offset) })
        else { return }
        struct NotInBase: Error {}
        do {
            try store.db.transaction { _ in
                var order = try store.order(.base)
                for (kind, result) in changes {
                    guard let album = result.album, let index = album.index else { throw NotInBase() }
                    switch kind {
                    case .add:
                        _ = try store.insert(.base, album, at: index, order: &order)
                    case .update:
                        guard try store.replaceFields(.base, album) else { throw NotInBase() }
                    case .move:
                        guard try store.move(.base, id: album.id, to: index, order: &order) else { throw NotInBase() }
                    case .delete:
                        guard try store.remove(.base, id: album.id, order: &order) else { throw NotInBase() }
                    }
                }
                try store.setMeta("version", String(answer.version))
            }
        } catch is NotInBase {
            return
        }
    }

    /// Takes note of what the server did with `entry` (inside the transaction that removes it
    /// from the outbox): an answered add's local id becomes the server's everywhere (the entry
    /// itself is removed first, so only later entries on the album are rewritten).
    private func record(_ outcome: PushOutcome, of entry: OutboxEntry, in report: inout SyncReport) throws {
        try store.removeFromOutbox(entry.seq)
        switch outcome {
        case let .applied(album):
            report.pushed += 1
            if let album, case let .add(localID, _, _, _) = entry.operation {
                try store.replace(.local, id: localID, with: album)
                try store.renameInOutbox(from: localID, to: album.id)
            }
        case let .dropped(reason):
            report.dropped.append(DroppedOperation(operation: entry.operation, reason: reason))
        }
    }

    /// One batch of entries in one `POST /batch` (one entry: its own request, as it always
    /// was) (not atomic, so each operation meets the
    /// conflict rules on its own), retried as a whole under the batch's key. An operation on
    /// an album added earlier in the same batch names it by `ref`; one on a local album whose
    /// add is not in the outbox any more is dropped without being sent.
    ///
    /// What the server answered for each operation is read as its single request's answer
    /// (`outcome(of:for:)`); a move refused because its target is past the end of the server's
    /// list now is sent again alone right after the batch, and goes to the last index. When the
    /// server refuses the batch as a whole (a field it rejects, which it names before applying
    /// anything), the entries go one by one, where each add's own answer decides. When the
    /// batch's key stays held by an interrupted request, whether the batch took effect is
    /// decided as for a single add (`sendAfterInterruptedBatch`).
    private func send(_ batch: PushBatch) async throws(ReplicaError) -> SentBatch {
        if batch.entries.count == 1, let entry = batch.entries.first {
            // One entry is its own request, under its own key.
            return SentBatch(outcomes: [(entry, try await sendAlone(entry))])
        }
        var operations: [BatchOperation] = []
        var sent: [(entry: OutboxEntry, operation: Int?)] = []
        var added: [String: Int] = [:]
        for entry in batch.entries {
            let operation = entry.operation
            if case let .add(localID, input, index, _) = operation {
                added[localID] = operations.count
                operations.append(.add(input, at: index))
                sent.append((entry, operations.count - 1))
                continue
            }
            let target: BatchOperation.Target
            if let ref = added[operation.albumID] {
                target = .ref(ref)
            } else if operation.albumID.hasPrefix(Self.localPrefix) {
                sent.append((entry, nil))
                continue
            } else {
                target = .id(operation.albumID)
            }
            switch operation {
            case .add: continue
            case .delete: operations.append(.delete(target))
            case let .move(_, index): operations.append(.move(target, to: index))
            case let .update(_, patch): operations.append(.update(target, patch))
            }
            sent.append((entry, operations.count - 1))
        }
        var answer: BatchAnswer?
        if !operations.isEmpty {
            do {
                let library = self.library
                answer = try await retrying { () async throws(BlueLibraryClientError) -> BatchAnswer in
                    try await self.client.batch(operations, atomic: false, in: library, idempotencyKey: batch.key)
                }
            } catch where Self.isKeyInProgress(error) {
                return SentBatch(outcomes: try await sendAfterInterruptedBatch(batch))
            } catch where Self.isKeyReused(error) {
                // The key's first batch was not these entries (some were taken back since): it
                // may have applied, so each entry is decided as after an interrupted batch.
                return SentBatch(outcomes: try await sendEach(batch.entries, resolvingAdds: true))
            } catch where error.status == 422 {
                // Refused as a whole before anything was applied (a field the server rejects):
                // each entry on its own, adds under their own keys.
                return SentBatch(outcomes: try await sendEach(batch.entries, resolvingAdds: false))
            } catch {
                throw .client(error)
            }
        }
        let results = Dictionary((answer?.results ?? []).map { ($0.operation, $0) }) { first, _ in first }
        var outcomes: [(OutboxEntry, PushOutcome)] = []
        for (entry, operation) in sent {
            guard let operation, let result = results[operation] else {
                outcomes.append((entry, .dropped("its album's add was dropped, so the album never reached the server")))
                continue
            }
            if case .move = entry.operation, result.problem?.type.hasSuffix("index-out-of-range") == true {
                // Alone, under the id its album has on the server by now (an add of this batch).
                var alone = entry
                if let add = added[entry.operation.albumID], let id = results[add]?.album?.id { alone.operation = alone.operation.renamed(to: id) }
                outcomes.append((entry, try await sendAlone(alone)))
            } else {
                outcomes.append((entry, Self.outcome(of: result, for: entry.operation)))
            }
        }
        return SentBatch(outcomes: outcomes, kinds: operations.map(\.kind), answer: answer)
    }

    /// What a push of one batch came to: each entry's outcome, and the batch's answer with the
    /// kind of each operation sent (nil when the entries went one by one).
    struct SentBatch {
        var outcomes: [(OutboxEntry, PushOutcome)]
        var kinds: [BatchOperation.Kind] = []
        var answer: BatchAnswer?
    }

    /// An operation's result in a batch, by the conflict rules.
    static func outcome(of result: BatchOperationResult, for operation: ReplicaOperation) -> PushOutcome {
        if result.isApplied {
            if case .add = operation { return .applied(result.album) }
            return .applied(nil)
        }
        if result.status == 404 {
            if case .delete = operation { return .applied(nil) }  // already deleted on the server: a no-op
            return .dropped("album \(operation.albumID) was deleted on the server")
        }
        return .dropped(result.problem?.description ?? "refused with status \(result.status)")
    }

    /// The batch's key is held by a request that never finished (the server died, or lost its
    /// database, while applying it): it may or may not have been applied. After
    /// `interruptedKeyGrace` its entries go one by one (`sendEach`, each add decided as an add
    /// whose key is held).
    private func sendAfterInterruptedBatch(_ batch: PushBatch) async throws(ReplicaError) -> [(OutboxEntry, PushOutcome)] {
        guard let first = batch.entries.first else { return [] }
        let since = first.blockedSince ?? Date()
        if first.blockedSince == nil { try storage { try store.setBlocked(first.seq, since: since) } }
        let grace = graceSeconds
        guard Date().timeIntervalSince(since) >= grace else {
            let title = batch.entries.lazy.compactMap { if case let .add(_, input, _, _) = $0.operation { input.title } else { nil } }.first
            throw .interruptedAdd(title: title ?? "a batch of \(batch.entries.count) changes", decidedAfter: since.addingTimeInterval(grace))
        }
        return try await sendEach(batch.entries, resolvingAdds: true)
    }

    /// The entries of a batch one request each, in order, an add's later entries renamed to the
    /// id it got. `resolvingAdds`: the batch may have been applied, so each add is decided as an
    /// add whose key is held (`resolveInterruptedAdd`: adopted when the server holds an album the
    /// replica does not know with its fields, else sent again); deletes, moves and patches
    /// repeat to the same state. Otherwise (the batch applied nothing) each add goes under its
    /// own key.
    private func sendEach(_ entries: [OutboxEntry], resolvingAdds: Bool) async throws(ReplicaError) -> [(OutboxEntry, PushOutcome)] {
        var outcomes: [(OutboxEntry, PushOutcome)] = []
        var renamed: [String: String] = [:]
        for var entry in entries {
            if let id = renamed[entry.operation.albumID] { entry.operation = entry.operation.renamed(to: id) }
            let outcome: PushOutcome
            if resolvingAdds, case let .add(_, input, _, _) = entry.operation {
                outcome = try await resolveInterruptedAdd(entry, input: input)
            } else {
                outcome = try await sendAlone(entry)
            }
            if case let .applied(album?) = outcome, case let .add(localID, _, _, _) = entry.operation { renamed[localID] = album.id }
            outcomes.append((entry, outcome))
        }
        return outcomes
    }

    /// One entry in a request of its own, with retries; an add whose own key stays held by an
    /// interrupted request is resolved once `interruptedKeyGrace` has passed (see
    /// `resolveInterruptedAdd`).
    private func sendAlone(_ entry: OutboxEntry) async throws(ReplicaError) -> PushOutcome {
        do {
            return try await sendWithRetries(entry)
        } catch where Self.isKeyInProgress(error) {
            guard case let .add(_, input, _, _) = entry.operation else { throw .client(error) }
            let since = entry.blockedSince ?? Date()
            if entry.blockedSince == nil { try storage { try store.setBlocked(entry.seq, since: since) } }
            let grace = graceSeconds
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

    static func isKeyReused(_ error: BlueLibraryClientError) -> Bool {
        error.status == 422 && (error.problem?.type.hasSuffix("idempotency-key-reused") ?? false)
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
            // 401/429/403 say nothing about the change, only about the key: keep it queued.
            throw error
        } catch where error.status == 404 {
            if case .delete = operation { return .applied(nil) }  // already deleted on the server: a no-op
            return .dropped("album \(operation.albumID) was deleted on the server")
        } catch let error where error.status.map({ (400..<500).contains($0) && !Self.isRetryable(error) }) ?? false {
            return .dropped(error.description)
        }
    }

    static let localPrefix = "local-"

    /// `interruptedKeyGrace` in seconds.
    private var graceSeconds: Double {
        Double(interruptedKeyGrace.components.seconds) + Double(interruptedKeyGrace.components.attoseconds) / 1e18
    }

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
