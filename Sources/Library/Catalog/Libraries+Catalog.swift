import BlueLibraryAPI

extension Libraries {
    /// Every library, ordered by id (`GET /libraries`).
    public func list() throws(LibraryError) -> [LibraryRecord] {
        try catalog { try store.libraries() }
    }

    /// The library `id` with its album count and version.
    /// - Throws: `.libraryNotFound`, `.storage`.
    public func record(_ id: LibraryID) throws(LibraryError) -> LibraryRecord {
        guard let record = try list().first(where: { $0.id == id }) else { throw .libraryNotFound(id) }
        return record
    }

    /// Creates an empty library from user input (`POST /libraries`).
    ///
    /// Rules: `id` follows `LibraryID`'s rule; `name` (trimmed, 1 to 200 characters) defaults to
    /// the id. Every field problem is reported at once. An id that was deleted before may be
    /// used again: its versions continue where they stopped.
    ///
    /// - Throws: `.invalid` (fields `id`, `name`), `.conflict` when a library has the id,
    ///   `.storage`.
    public func create(id text: String, name: String? = nil) throws(LibraryError) -> LibraryRecord {
        var problems: [FieldError] = []
        var id: LibraryID?
        do {
            id = try LibraryID(validating: text)
        } catch {
            problems += Self.fieldErrors(error)
        }
        var validName: String?
        do {
            validName = try name.map { name throws(LibraryError) in try CatalogName.validatedName(name) }
        } catch {
            problems += Self.fieldErrors(error)
        }
        guard problems.isEmpty, let id else { throw .invalid(ValidationFailure(problems)) }
        return try create(id: id, name: validName)
    }

    /// Creates an empty library with an id already checked; `name` (already trimmed and
    /// checked) defaults to the id. The id of a deleted library continues its versions, and
    /// `library.replaced` is published at the new one (an event stream of the old library, or
    /// one resumed from its ids, learns that everything changed).
    /// - Throws: `.conflict` when a library has the id, `.storage`.
    public func create(id: LibraryID, name: String? = nil) throws(LibraryError) -> LibraryRecord {
        if try list().contains(where: { $0.id == id }) {
            throw .conflict(
                "a library with id \"\(id)\" already exists; choose another id, or rename that one with PATCH /libraries/\(id)")
        }
        // A create racing this one is refused by the store with its own `.conflict`.
        let record = try catalog { try store.createLibrary(id, name: name ?? id.rawValue) }
        if record.version > 0 {
            // The id of a deleted library, its versions continued: tell whoever still follows
            // the old library's events (or resumes from one of its ids) to reload.
            sinks(id)?.publish(.libraryReplaced(version: record.version))
        }
        return record
    }

    /// Changes a library's display name (`PATCH /libraries/{lib}`): trimmed, 1 to 200 characters.
    /// - Throws: `.invalid` (field `name`), `.libraryNotFound`, `.storage`.
    public func rename(_ id: LibraryID, name: String) throws(LibraryError) -> LibraryRecord {
        let name = try CatalogName.validatedName(name)
        return try catalog { try store.renameLibrary(id, name: name) }
    }

    /// Deletes library `id` with everything in it (`DELETE /libraries/{lib}`).
    ///
    /// Rules:
    /// - `default` is never deleted.
    /// - A library that holds albums is deleted only with `force` (its albums go with it).
    /// - A library that views show is deleted only with `force`, which first removes it from
    ///   each such view's sources (saving the view with its revision + 1, so the view's old
    ///   pages and ETags no longer match). A view left without sources stays, empty, until its
    ///   sources are set again. The views are updated before the library is deleted: if the
    ///   deletion then fails, the views no longer show a library that still exists, which is
    ///   safe, whereas the other order could leave views naming a library that is gone.
    /// - The library's facade is dropped; a library created later with the same id gets a new
    ///   one and continues the version numbers (so old ETags and cursors never match it).
    ///
    /// - Throws: `.conflict` (default, not empty, used by views: the message names them and
    ///   says what to do), `.libraryNotFound`, `.storage`.
    public func delete(_ id: LibraryID, force: Bool = false) throws(LibraryError) {
        guard id != .default else {
            throw .conflict("the library default cannot be deleted; delete its albums instead if you want it empty")
        }
        // One definition change at a time: no view can gain this library as a source between
        // the check below and the delete (createView and updateView hold the same lock).
        try viewCache.serialized { () throws(LibraryError) in
            let record = try record(id)
            if record.albumCount > 0, !force {
                throw .libraryNotEmpty(id, count: record.albumCount)
            }
            let users = try knownViews().values.filter { $0.sources.contains(id) }.sorted { $0.id < $1.id }
            if !users.isEmpty, !force {
                let names = users.map { "\"\($0.id)\"" }.joined(separator: ", ")
                throw .conflict(
                    "library \"\(id)\" is a source of the view\(users.count == 1 ? "" : "s") \(names); "
                        + "remove it from their sources first, or delete with ?force=true to remove it from them")
            }
            for view in users { try removeSource(id, from: view.id) }
            // Checked again inside the delete: an album may have arrived since `record` was read.
            try catalog { try store.deleteLibrary(id, onlyIfEmpty: !force) }
        }
        dropFacade(id)
    }

    /// Takes `source` out of view `view`'s sources (a new revision), by compare-and-set like
    /// `updateView`: a definition another instance changed meanwhile is read again.
    private func removeSource(_ source: LibraryID, from view: ViewID) throws(LibraryError) {
        for _ in 0..<Self.viewUpdateAttempts {
            guard var definition = try knownViews()[view], definition.sources.contains(source) else { return }
            let previous = definition.revision
            definition.sources.removeAll { $0 == source }
            definition.revision += 1
            if try save(definition, expecting: previous) { return }
            viewCache.forget()
        }
        throw .conflict("the view \"\(view)\" kept being changed by other requests; repeat the delete")
    }

    /// Runs one catalog call of the store, translating errors to `LibraryError`.
    private func catalog<T>(_ body: () throws -> T) throws(LibraryError) -> T {
        do {
            return try body()
        } catch {
            throw LibraryFacade.libraryError(from: error)
        }
    }

    private static func fieldErrors(_ error: LibraryError) -> [FieldError] {
        guard case .invalid(let failure) = error else { return [] }
        return failure.errors
    }
}
