import BlueLibraryAPI
import Essentials
import Foundation
import Synchronization

/// The single entry to the domain for every route: the tutorial's `LibraryAPI`, without the
/// singleton. Collaborators come in through `init`.
///
/// Rules every method keeps:
/// - Each mutation is exactly **one** `store.write` transaction that changes the albums, bumps
///   the library version once and pushes its undo command. The version and the undo stack can
///   therefore never disagree with the data, even after a crash.
/// - A mutation that changes nothing (a move to the same index, an empty patch) commits
///   nothing: no version bump, no undo command, no event.
/// - Events are published only after the transaction has committed, never on failure.
/// - The change feed entry of a mutation is written in its own transaction (`recordChanges`).
/// - Everything thrown is a `LibraryError`; store failures become `.storage`.
///
/// Methods are synchronous: the store is synchronous, and the server decides which thread
/// (event loop or worker pool) runs them.
public final class LibraryFacade: Sendable {
    let store: any AlbumStore
    public let library: LibraryID
    /// `store.isShared`, read once: other processes commit to the store, so nothing this
    /// facade remembers about the version can be trusted.
    let isShared: Bool
    let clock: @Sendable () -> Date
    let ids: AlbumIDGenerator
    /// At most this many undo commands are kept; pushing more drops the oldest. Changes
    /// live with the `undo.depth` setting (`setUndoLimit`).
    public var undoLimit: Int { undoLimitValue.load(ordering: .relaxed) }
    private let undoLimitValue: Atomic<Int>
    let events: (any LibraryEventSink)?
    /// How long the change feed keeps changes.
    public let changeRetention: ChangeRetention
    /// The version as last known, and how many commits this facade has made. A commit that
    /// bumps the version gives the new one (from its events), so no read follows a commit; a
    /// read that raced with a commit is not remembered.
    private let versionMemo = Mutex<(commits: UInt64, version: Int64?)>((0, nil))
    /// The registry that made this facade (weak: the registry owns its facades), where the
    /// undo of a move between libraries finds the other library's facade.
    private let registry = Mutex(RegistryLink())
    /// Puts this library's event publishing in commit order (see `CommitOrder`).
    let commitOrder = CommitOrder()
    /// The filter counts of `count=true` pages (shared by every facade of one registry, so one
    /// bound holds for all libraries; see `FilterCounts`).
    public let counts: FilterCounts

    /// - Parameters:
    ///   - store: where albums, versions, undo commands and states live.
    ///   - library: the library this facade serves.
    ///   - clock: the time for `createdAt`/`updatedAt` (truncated to milliseconds).
    ///   - ids: where new album ids come from (`.random(clock:)` in production).
    ///   - undoLimit: how many undo commands to keep (0 disables undo).
    ///   - events: told about every committed change; `nil` for none.
    ///   - changeRetention: how long the change feed (`changes(since:limit:)`) keeps changes.
    ///   - counts: where filter counts are kept (a registry passes its own to every facade).
    public init(
        store: any AlbumStore,
        library: LibraryID = .default,
        clock: @escaping @Sendable () -> Date,
        ids: AlbumIDGenerator,
        undoLimit: Int = 100,
        events: (any LibraryEventSink)? = nil,
        changeRetention: ChangeRetention = .default,
        counts: FilterCounts = FilterCounts()
    ) {
        precondition(undoLimit >= 0, "undoLimit must not be negative")
        self.store = store
        self.library = library
        self.counts = counts
        self.isShared = store.isShared
        self.clock = clock
        self.ids = ids
        self.undoLimitValue = Atomic(undoLimit)
        self.events = events
        self.changeRetention = changeRetention
    }

    /// The library version: 0 for a library never written, increased by every mutation.
    public func version() throws(LibraryError) -> Int64 {
        try reading { try $0.version() }
    }

    /// The library version without a store read: known from the last read or the last commit
    /// (only the first call, or one racing a commit, reads). Valid while every commit to its
    /// library goes through this facade or tells it (`didCommit`: a move between libraries made
    /// by the other library's facade), in one process; the request model uses it to tell current
    /// pages from outdated ones. Call it once at start so no request reads.
    ///
    /// On a shared store (``AlbumStore/isShared``: other instances commit too) every call reads
    /// the version (`versions(of:)`, one small statement), so a request that starts after any
    /// instance acknowledged a write sees that write.
    public func currentVersion() throws(LibraryError) -> Int64 {
        if isShared { return try sharedVersion() }
        let (commits, known) = versionMemo.withLock { ($0.commits, $0.version) }
        if let known { return known }
        let read = try version()
        versionMemo.withLock { memo in
            if memo.commits == commits { memo.version = read }
        }
        return read
    }

    /// The version if this facade knows it without a read (``currentVersion()`` has read it,
    /// or a commit gave it); nil otherwise. For paths that must never wait for the store.
    /// Always nil on a shared store: what another instance committed is never known without
    /// a read, so such paths go where they may wait.
    public func knownVersion() -> Int64? {
        if isShared { return nil }
        return versionMemo.withLock { $0.version }
    }

    /// The version as the store has it now, in one small statement.
    private func sharedVersion() throws(LibraryError) -> Int64 {
        do {
            return try store.versions(of: [library])[0]
        } catch {
            throw Self.libraryError(from: error)
        }
    }

    /// The number of albums.
    public func count() throws(LibraryError) -> Int {
        try reading { try $0.count() }
    }

    // MARK: - Transactions

    /// The current time as the domain records it (whole milliseconds).
    func now() -> Date {
        Timestamp.truncated(clock())
    }

    /// Runs `body` in a read transaction, translating errors to `LibraryError`.
    func reading<T>(_ body: (any AlbumStoreReader) throws -> T) throws(LibraryError) -> T {
        do {
            return try store.read(library, body)
        } catch {
            throw Self.libraryError(from: error)
        }
    }

    /// Runs `body` in one write transaction, then publishes the events it returned — only
    /// after the commit succeeded, and after those of every earlier commit of this library. The
    /// change feed entry of the mutation is derived from the same events and recorded inside the
    /// transaction (see `recordChanges`), so the feed, the events and the data can never
    /// disagree.
    /// - Parameter alone: a mutation that changes a great many rows (an archive import) runs in a
    ///   transaction of its own (`AlbumStore.writeAlone`).
    func mutating<T>(alone: Bool = false, _ body: (any AlbumStoreWriter) throws -> (T, [LibraryEvent])) throws(LibraryError) -> T {
        do {
            return try mutatingUntranslated(alone: alone, body)
        } catch {
            throw Self.libraryError(from: error)
        }
    }

    /// `mutating` with what failed thrown as it was (a batch tells its own abort from the rest).
    func mutatingUntranslated<T>(alone: Bool = false, _ body: (any AlbumStoreWriter) throws -> (T, [LibraryEvent])) throws -> T {
        let (result, committedEvents): (T, [LibraryEvent])
        var ticket: UInt64?
        let work = { (writer: any AlbumStoreWriter) throws -> (T, [LibraryEvent]) in
            ticket = self.retake(ticket)
            let (result, events) = try body(writer)
            try self.recordChanges(events, writer)
            return (result, events)
        }
        do {
            (result, committedEvents) = alone ? try store.writeAlone(library, work) : try store.write(library, work)
        } catch {
            if let ticket { commitOrder.finish(ticket, nil) }
            throw error
        }
        didCommit(committedEvents, ticket: ticket)
        return result
    }

    /// A ticket of `commitOrder` for a write body starting now; a body run again (a store that
    /// retries a transaction) gives up the ticket of the attempt that rolled back.
    func retake(_ ticket: UInt64?) -> UInt64 {
        if let ticket { commitOrder.finish(ticket, nil) }
        return commitOrder.take()
    }

    /// Takes note of a commit to this library, whether this facade made it or another one did
    /// (a move between libraries writes both libraries in one transaction made elsewhere):
    /// `noteCommit` then `publish`. Call it once per committed transaction, after the commit,
    /// with this library's events.
    func didCommit(_ committedEvents: [LibraryEvent], ticket: UInt64?) {
        noteCommit(committedEvents)
        publish(committedEvents, ticket: ticket)
    }

    /// Keeps the version memo right at once, so a request that starts after this returns sees
    /// the commit.
    func noteCommit(_ committedEvents: [LibraryEvent]) {
        // Every version bump has exactly one versioned event (the change feed relies on it);
        // state events carry the version without bumping it, and a commit without a bump
        // leaves the version as it was.
        let bumped = committedEvents.compactMap { LibraryChange($0, recordedAt: Date(timeIntervalSince1970: 0))?.version }.max()
        versionMemo.withLock { memo in
            memo.commits &+= 1
            if let bumped {
                // Commits of the one writer are ordered; their memo updates may not be.
                memo.version = max(memo.version ?? bumped, bumped)
            }
        }
    }

    /// Publishes `committedEvents` to this library's sink in commit order: after the events of
    /// every earlier ticket of `commitOrder` (`ticket`: the one the commit's body took; nil
    /// publishes at once), then runs `next`.
    func publish(_ committedEvents: [LibraryEvent], ticket: UInt64?, then next: (@Sendable () -> Void)? = nil) {
        let publish: @Sendable () -> Void = { [events] in
            if let events {
                for event in committedEvents {
                    events.publish(event)
                }
            }
            next?()
        }
        if let ticket {
            commitOrder.finish(ticket, publish)
        } else {
            publish()
        }
    }

    /// Bumps the version and records the inverse command: the two things every mutation does
    /// besides its own change, kept in one place so no mutation forgets one.
    func finishMutation(_ writer: any AlbumStoreWriter, undo: UndoCommand?) throws -> Int64 {
        let version = try writer.bumpVersion()
        if let undo {
            try writer.pushUndo(undo, limit: undoLimit)
        }
        return version
    }

    /// Records the change feed entries of `events` (one per version bump; state events have
    /// none) in the mutation's own transaction, then prunes a bounded number of expired ones.
    func recordChanges(_ events: [LibraryEvent], _ writer: any AlbumStoreWriter) throws {
        let recordedAt = now()
        var newest: Int64?
        for event in events {
            guard let change = LibraryChange(event, recordedAt: recordedAt) else { continue }
            try writer.recordChange(change)
            newest = change.version
        }
        guard let newest else { return }
        let retention = changeRetention
        let cutoff = recordedAt.addingTimeInterval(-retention.age.seconds)
        try writer.pruneChanges(
            throughVersion: newest - Int64(retention.count), recordedBefore: cutoff, limit: retention.prunePerWrite)
    }

    static func libraryError(from error: any Error) -> LibraryError {
        switch error {
        case let error as LibraryError: error
        case let failure as ValidationFailure: .invalid(failure)
        case let output as ExportOutputError: .outputFailed(UnderlyingError(output.underlying))
        default: .storage(UnderlyingError(error))
        }
    }
}

extension LibraryFacade {
    struct RegistryLink {
        weak var libraries: Libraries?
    }

    /// Links this facade to the registry that made it (once, when it is made).
    func attach(to libraries: Libraries) {
        registry.withLock { $0.libraries = libraries }
    }

    /// The facade of library `id` for a write that spans this library and that one: the
    /// registry's, so its version memo and event sink see the commit. A facade made on its own
    /// (tests, tools) has no registry and gets a facade made for the one call, whose sink is
    /// none.
    /// - Throws: `.libraryNotFound` when the registry knows no such library.
    func peerFacade(_ id: LibraryID) throws(LibraryError) -> LibraryFacade {
        if let libraries = registry.withLock({ $0.libraries }) {
            return try libraries.facade(id)
        }
        return LibraryFacade(
            store: store, library: id, clock: clock, ids: ids, undoLimit: undoLimit, events: nil,
            changeRetention: changeRetention, counts: counts)
    }
}

extension LibraryFacade {
    /// Changes how many undo commands are kept from the next push on (the `undo.depth`
    /// setting, live). A smaller limit trims the stack at the next mutation.
    public func setUndoLimit(_ limit: Int) {
        precondition(limit >= 0, "undoLimit must not be negative")
        undoLimitValue.store(limit, ordering: .relaxed)
    }
}
