import BlueLibraryAPI

extension LibraryFacade {
    /// Remakes the library's artist sort keys with `articles` (the `sorting.ignoredArticles`
    /// setting) in one transaction of its own: readers keep seeing the old keys and articles
    /// until it commits, then the new ones, never a mix. When any key changed, the version goes
    /// up with a `replaced` change (the artist order is another one: cached pages, ETags and
    /// exact walks of the old version end, and clients reload); otherwise only the articles are
    /// stored. Returns whether any key changed.
    @discardableResult
    public func setSortArticles(_ articles: SortArticles) throws(LibraryError) -> Bool {
        try mutating(alone: true) { writer in
            guard try writer.setSortArticles(articles) else { return (false, []) }
            return (true, [.libraryReplaced(version: try writer.bumpVersion())])
        }
    }

    /// The articles the library's artist keys are made with now.
    public func sortArticles() throws(LibraryError) -> SortArticles {
        try reading { try $0.sortArticles() }
    }
}
