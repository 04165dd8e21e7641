extension Libraries {
    /// The version of view `id` if answering needs no store read: the definitions are in
    /// memory and every source's facade is made; nil otherwise ("ask ``viewVersion(_:)`` on a
    /// thread that may wait"), never "no such view".
    ///
    /// A facade that has not learnt its version yet (it reads it once, on first use, and keeps
    /// it from then on) makes this nil, so this never reads the store. Callers that
    /// must never wait (the request model's event-loop path) use this only for views whose
    /// ``viewVersion(_:)`` they have seen answer since the definition last changed.
    ///
    /// Always nil on a shared store: another instance may have changed the definition or a
    /// source, which only a read can tell.
    public func viewVersionInMemory(_ id: ViewID) -> ViewVersion? {
        if isShared { return nil }
        struct NotLoaded: Error {}
        guard let views = try? viewCache.all({ throw NotLoaded() }), let view = views[id] else { return nil }
        let sources: [LibraryFacade]
        if let memo = viewSources.withLock({ $0[id] }), memo.revision == view.revision {
            sources = memo.facades  // one lookup instead of one per source
        } else {
            guard let found = loadedFacades(view.sources) else { return nil }
            viewSources.withLock { $0[id] = (view.revision, found) }
            sources = found
        }
        var versions: [Int64] = []
        versions.reserveCapacity(sources.count)
        for facade in sources {
            guard let version = facade.knownVersion() else { return nil }
            versions.append(version)
        }
        return ViewVersion(revision: view.revision, versions: versions)
    }
}
