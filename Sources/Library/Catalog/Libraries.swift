import Foundation
import Synchronization

/// Every library of one store, each behind its own `LibraryFacade`, and the composite views
/// over them: the entry point for routes that name a library or a view.
///
/// One facade per library id lives as long as the library: it keeps that library's version
/// memo (the request model's "current" test), so every request for a library must go through
/// ``facade(_:)`` rather than make its own. Deleting a library drops its facade; a later
/// library with the same id gets a new one (the store continues the version numbers).
///
/// On a shared store (``AlbumStore/isShared``) the registry remembers nothing another
/// instance can change: a library another instance created is found in the store on first
/// use, one it deleted fails every read and write of its facade with `.libraryNotFound`,
/// and view definitions and versions are read per request.
///
/// Everything server-wide (write protection, settings, the undo depth) stays outside:
/// ``setUndoLimit(_:)`` applies to every library.
public final class Libraries: Sendable {
    let store: any AlbumStore
    /// `store.isShared`: other instances change libraries, views and versions too, so view
    /// definitions and versions are read per request instead of remembered (see
    /// `Libraries+Views.swift`).
    let isShared: Bool
    let clock: @Sendable () -> Date
    let ids: AlbumIDGenerator
    let changeRetention: ChangeRetention
    private let undoLimit: Atomic<Int>
    /// Where the facade of a library publishes its events (`nil`: nowhere).
    let sinks: @Sendable (LibraryID) -> (any LibraryEventSink)?
    private let facades: Mutex<[LibraryID: LibraryFacade]>
    /// The view definitions as last read or written (see `Libraries+Views.swift`).
    let viewCache = ViewCache()
    /// The facades of each view's sources, for the revision they were looked up at (see
    /// `viewVersionInMemory`); emptied whenever a facade is dropped.
    let viewSources = Mutex<[ViewID: (revision: Int64, facades: [LibraryFacade])]>([:])
    /// The facade of `default`, which always exists.
    public let defaultLibrary: LibraryFacade
    /// The filter counts of every library and view (`count=true`), under one bound.
    public let counts: FilterCounts

    /// - Parameters:
    ///   - store: where every library lives.
    ///   - clock, ids, undoLimit, changeRetention: as for `LibraryFacade`, the same for each.
    ///   - events: the event sink of each library (called once per facade made).
    public init(
        store: any AlbumStore,
        clock: @escaping @Sendable () -> Date,
        ids: AlbumIDGenerator,
        undoLimit: Int = 100,
        changeRetention: ChangeRetention = .default,
        events: @escaping @Sendable (LibraryID) -> (any LibraryEventSink)? = { _ in nil }
    ) {
        precondition(undoLimit >= 0, "undoLimit must not be negative")
        self.store = store
        self.isShared = store.isShared
        self.clock = clock
        self.ids = ids
        self.changeRetention = changeRetention
        self.undoLimit = Atomic(undoLimit)
        self.sinks = events
        let counts = FilterCounts()
        self.counts = counts
        let first = LibraryFacade(
            store: store, library: .default, clock: clock, ids: ids, undoLimit: undoLimit, events: events(.default),
            changeRetention: changeRetention, counts: counts)
        defaultLibrary = first
        facades = Mutex([.default: first])
        first.attach(to: self)
    }

    /// The facade of library `id`.
    /// - Throws: `.libraryNotFound` when the store has no such library; `.storage`.
    public func facade(_ id: LibraryID) throws(LibraryError) -> LibraryFacade {
        if let known = facades.withLock({ $0[id] }) { return known }
        let exists: Bool
        do {
            exists = try store.libraries().contains { $0.id == id }
        } catch {
            throw LibraryFacade.libraryError(from: error)
        }
        guard exists else { throw .libraryNotFound(id) }
        return facadeForExisting(id)
    }

    /// The facade of `id` if this process has made it already: a lock and a dictionary lookup,
    /// never a store read (for paths that must not block, such as the request model's fast
    /// path); nil means "ask ``facade(_:)``", not "no such library".
    public func loadedFacade(_ id: LibraryID) -> LibraryFacade? {
        if id == .default { return defaultLibrary }
        return facades.withLock { $0[id] }
    }

    /// ``loadedFacade(_:)`` for several libraries under one lock (a view's sources); nil when
    /// any of them is not made yet.
    func loadedFacades(_ ids: [LibraryID]) -> [LibraryFacade]? {
        facades.withLock { facades in
            var found: [LibraryFacade] = []
            found.reserveCapacity(ids.count)
            for id in ids {
                guard let facade = facades[id] else { return nil }
                found.append(facade)
            }
            return found
        }
    }

    /// The facade of `id`, made now if there is none; for a library known to exist.
    func facadeForExisting(_ id: LibraryID) -> LibraryFacade {
        facades.withLock { facades in
            if let known = facades[id] { return known }
            let made = LibraryFacade(
                store: store, library: id, clock: clock, ids: ids, undoLimit: undoLimit.load(ordering: .relaxed),
                events: sinks(id), changeRetention: changeRetention, counts: counts)
            made.attach(to: self)
            facades[id] = made
            return made
        }
    }

    /// Forgets the facade of a deleted library.
    func dropFacade(_ id: LibraryID) {
        precondition(id != .default, "the default library is never dropped")
        _ = facades.withLock { $0.removeValue(forKey: id) }
        viewSources.withLock { $0 = [:] }
    }

    /// Changes how many undo commands every library keeps (the `undo.depth` setting).
    public func setUndoLimit(_ limit: Int) {
        precondition(limit >= 0, "undoLimit must not be negative")
        facades.withLock { facades in
            undoLimit.store(limit, ordering: .relaxed)
            for facade in facades.values { facade.setUndoLimit(limit) }
        }
    }
}
