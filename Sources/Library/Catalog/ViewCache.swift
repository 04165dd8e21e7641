import Synchronization

/// The view definitions in memory, so a view's version (``Libraries/viewVersion(_:)``) and its
/// pages need no catalog read. Loaded from the store on first use; every change of a
/// definition made through `Libraries` is recorded here after the store committed it (so
/// views must be saved through `Libraries.save`, never by the store directly).
///
/// A load that raced with a change is used once but not kept (the generation tells).
final class ViewCache: Sendable {
    private let state = Mutex<(generation: UInt64, views: [ViewID: ViewDefinition]?)>((0, nil))
    /// The highest revision any definition had that this process loaded or recorded, deleted
    /// ones included: a new view starts above it (see `Libraries.createView`).
    private let highest = Atomic<Int64>(0)

    /// The highest revision seen so far (deleted views included).
    var highestRevision: Int64 { highest.load(ordering: .relaxed) }
    /// Held by every change of a definition, so check-then-save (an id taken, a revision) is
    /// not raced by another change in this process.
    private let writes = Mutex<Void>(())

    /// Runs `body` while no other definition change runs.
    func serialized<T>(_ body: () throws(LibraryError) -> T) throws(LibraryError) -> T {
        try writes.withLock { _ throws(LibraryError) in try body() }
    }

    /// Every definition, loading them with `load` when none are known.
    func all(_ load: () throws -> [ViewDefinition]) throws -> [ViewID: ViewDefinition] {
        let (generation, known) = state.withLock { ($0.generation, $0.views) }
        if let known { return known }
        let loaded = Dictionary(try load().map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        for view in loaded.values { highest.max(view.revision) }
        state.withLock { state in
            if state.generation == generation && state.views == nil { state.views = loaded }
        }
        return loaded
    }

    /// Raises ``highestRevision`` to the revisions of `views` (definitions read without
    /// keeping them, on a shared store).
    func noteRevisions(_ views: [ViewDefinition]) {
        for view in views { highest.max(view.revision) }
    }

    /// Records a committed definition (or its deletion, with `nil`).
    func set(_ id: ViewID, _ view: ViewDefinition?) {
        if let view { highest.max(view.revision) }
        state.withLock { state in
            state.generation &+= 1
            state.views?[id] = view
        }
    }

    /// Forgets everything; the next use reads the store.
    func forget() {
        state.withLock { state in
            state.generation &+= 1
            state.views = nil
        }
    }
}

extension Atomic<Int64> {
    /// Raises the value to `value` if it is lower.
    fileprivate func max(_ value: Int64) {
        var current = load(ordering: .relaxed)
        while current < value {
            let (exchanged, original) = compareExchange(expected: current, desired: value, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }
}
