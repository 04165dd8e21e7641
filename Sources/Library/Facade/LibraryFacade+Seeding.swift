extension LibraryFacade {
    /// Fills a brand-new library with the tutorial's five albums (`SeedAlbums`), in order.
    ///
    /// Rule: "brand new" means version 0 **and** no albums. Every mutation bumps the version,
    /// so a library whose user deleted everything (version > 0, no albums) is never re-seeded —
    /// the tutorial kept deletions for the same reason, by archiving the emptied list. Seeding
    /// bumps the version once, pushes no undo command (there is no "before" to return to) and
    /// publishes `libraryReplaced`.
    ///
    /// - Returns: whether the library was seeded.
    @discardableResult
    public func seedIfEmpty() throws(LibraryError) -> Bool {
        try mutating { writer in
            guard try writer.version() == 0, try writer.count() == 0 else { return (false, []) }
            let createdAt = now()
            for (index, input) in SeedAlbums.inputs.enumerated() {
                try writer.insert(Album(id: ids.next(), input: input, createdAt: createdAt), at: index)
            }
            let version = try finishMutation(writer, undo: nil)
            return (true, [.libraryReplaced(version: version)])
        }
    }
}
