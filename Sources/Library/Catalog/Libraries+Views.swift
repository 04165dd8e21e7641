import BlueLibraryAPI
import Essentials
import Synchronization

/// A view's version for the request model: its revision and the version of each source, in
/// the view's source order. Any change in any source, or of the definition, changes it.
public struct ViewVersion: Sendable, Hashable {
    public var revision: Int64
    public var versions: [Int64]

    public init(revision: Int64, versions: [Int64]) {
        self.revision = revision
        self.versions = versions
    }

    /// A compact text of the whole vector (`3:12.0.5`), for ETags and cache keys.
    public var tag: String {
        "\(revision):" + versions.map(String.init).joined(separator: ".")
    }
}

/// An album addressed through a view: where it is in the view and in its own library.
///
/// Encodes flat: the album's fields plus `"index"` (the view index) and `"library"`.
public struct ViewAlbum: Sendable, Equatable, Encodable {
    public var album: Album
    /// The album's index in the view.
    public var index: Int
    /// The library that holds it, and its index there.
    public var library: LibraryID
    public var libraryIndex: Int

    public init(album: Album, index: Int, library: LibraryID, libraryIndex: Int) {
        self.album = album
        self.index = index
        self.library = library
        self.libraryIndex = libraryIndex
    }

    private enum CodingKeys: String, CodingKey {
        case index, library
    }

    public func encode(to encoder: any Encoder) throws {
        try album.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(index, forKey: .index)
        try container.encode(library, forKey: .library)
    }
}

extension Libraries {
    /// A view has 1 to this many sources.
    public static let maxViewSources = WalkMark.maxSources

    // MARK: - Definitions

    /// Every view, ordered by id.
    public func views() throws(LibraryError) -> [ViewDefinition] {
        try knownViews().values.sorted { $0.id < $1.id }
    }

    /// The view `id`.
    /// - Throws: `.viewNotFound`.
    public func view(_ id: ViewID) throws(LibraryError) -> ViewDefinition {
        guard let view = try knownViews()[id] else { throw .viewNotFound(id) }
        return view
    }

    /// Creates a view. Its first revision is the clock in milliseconds, or one above every
    /// revision this process has seen (deleted views included) if that is higher: a view
    /// created again under the id of a deleted one never takes a revision its predecessor had
    /// (which its clients may still hold in ETags and cursors). Across a restart this rests on
    /// the clock: it fails only if the deleted view was changed more than once per millisecond
    /// over its life, or the clock went back.
    ///
    /// - Parameters:
    ///   - name: the display name (trimmed, 1-200 characters); nil: the id.
    ///   - sources: 1 to ``maxViewSources`` existing libraries, no duplicates; the view's
    ///     position order is their orders concatenated in this order.
    ///   - filter: applied to every source, in addition to each list request's filter.
    /// - Throws: `.invalid` naming `name`, `sources` or the filter's field; `.conflict` when
    ///   the id is taken.
    public func createView(id: ViewID, name: String? = nil, sources: [LibraryID], filter: AlbumFilter = .all)
        throws(LibraryError) -> ViewDefinition
    {
        try viewCache.serialized { () throws(LibraryError) in
            let name = try CatalogName.validatedName(name ?? id.rawValue)
            try checkSources(sources)
            let filter = try filter.validated()
            let taken = LibraryError.conflict("a view with id \"\(id)\" exists; choose another id, or change that view with PATCH")
            guard try knownViews()[id] == nil else { throw taken }
            let first = max(1, Timestamp.milliseconds(clock()), viewCache.highestRevision + 1)
            let view = ViewDefinition(id: id, name: name, sources: sources, filter: filter, revision: first)
            // A plain insert: another instance that created the id since the check wins.
            guard try save(view, expecting: nil) else { throw taken }
            return view
        }
    }

    /// How often ``updateView(_:name:sources:filter:)`` applies its change again to a
    /// definition another instance changed meanwhile, before it answers `.conflict`.
    static let viewUpdateAttempts = 8

    /// Changes a view; nil leaves a part unchanged. Every change increases the revision by
    /// one (so the view's pages, ETags and cursor walks of the old definition end); a call
    /// that changes nothing changes nothing.
    ///
    /// The store saves it by compare-and-set on the revision read: when another instance
    /// changed the view in between, the given parts are applied again to its definition (a
    /// PATCH changes the parts it names, on whatever the view is then), so neither change is
    /// lost and no two definitions ever share a revision.
    /// - Throws: `.viewNotFound` (also when deleted meanwhile); `.invalid` as for
    ///   ``createView(id:name:sources:filter:)``; `.conflict` when other changes kept winning
    ///   (``viewUpdateAttempts`` times).
    public func updateView(_ id: ViewID, name: String? = nil, sources: [LibraryID]? = nil, filter: AlbumFilter? = nil)
        throws(LibraryError) -> ViewDefinition
    {
        try viewCache.serialized { () throws(LibraryError) in
            var current = try self.view(id)
            let name = try name.map { name throws(LibraryError) in try CatalogName.validatedName(name) }
            if let sources { try checkSources(sources) }
            let filter = try filter.map { filter throws(LibraryError) in try filter.validated() }
            for attempt in 0..<Self.viewUpdateAttempts {
                if attempt > 0 { current = try self.view(id) }
                let before = current
                var view = current
                if let name { view.name = name }
                if let sources { view.sources = sources }
                if let filter { view.filter = filter }
                guard view != before else { return view }
                view.revision += 1
                if try save(view, expecting: before.revision) { return view }
                // Changed (or deleted) by another instance since the read: forget what this
                // process remembers and apply the change to what is stored now.
                viewCache.forget()
            }
            throw .conflict("the view \"\(id)\" kept being changed by other requests; read it again and repeat the change")
        }
    }

    /// Deletes a view (its libraries are not touched).
    /// - Throws: `.viewNotFound`.
    public func deleteView(_ id: ViewID) throws(LibraryError) {
        try viewCache.serialized { () throws(LibraryError) in
            let deleted: Bool
            do {
                deleted = try store.deleteView(id)
            } catch {
                throw LibraryFacade.libraryError(from: error)
            }
            viewCache.set(id, nil)
            guard deleted else { throw .viewNotFound(id) }
        }
    }

    /// The version of view `id` without the database (once every source's facade has read
    /// its version): its revision and each source's `currentVersion()`.
    /// - Throws: `.viewNotFound`; `.libraryNotFound` for a source that no longer exists.
    ///
    /// On a shared store the definition and the versions are read each call (the definitions,
    /// then every source's version in one statement), so no instance answers with a version a
    /// change committed elsewhere has made outdated.
    public func viewVersion(_ id: ViewID) throws(LibraryError) -> ViewVersion {
        let view = try self.view(id)
        if isShared {
            do {
                return ViewVersion(revision: view.revision, versions: view.sources.isEmpty ? [] : try store.versions(of: view.sources))
            } catch {
                throw LibraryFacade.libraryError(from: error)
            }
        }
        var versions: [Int64] = []
        for source in view.sources {
            versions.append(try facade(source).currentVersion())
        }
        return ViewVersion(revision: view.revision, versions: versions)
    }

    // MARK: - Pages

    /// One page of view `id`, read in one snapshot of all its sources: the same request as a
    /// library list (sorts, filters, cursors, offset, count), the view's filter applied
    /// besides the request's. See `CompositePager` for the order and walk rules.
    ///
    /// - Throws: `.viewNotFound`, `.invalid`, `.invalidCursor`, `.walkExpired`,
    ///   `.libraryNotFound` (a source deleted under the view), `.storage`.
    public func page(view id: ViewID, _ request: PageRequest) throws(LibraryError) -> AlbumListPage {
        try request.checked()
        let view = try self.view(id)
        let query = AlbumQuery(sort: request.query.sort, filter: try request.query.filter.validated())
        let counts = counts
        let pager = { (readers: [any AlbumStoreReader]) in
            CompositePager(
                readers: readers, libraries: view.sources, query: query, filter: CombinedFilter(query.filter, view: view.filter),
                scope: PageCursor.scope(view: id), revision: view.revision, labels: true, counts: counts)
        }
        return try reading(view) { readers in
            try pager(readers).page(start: request.start, limit: request.limit, includeTotal: request.includeTotal)
        }
    }

    // MARK: - Index addressing (decompose / adduce)

    /// The album at view index `index` (the view's position order, unfiltered).
    /// - Throws: `.indexOutOfRange` unless `0 <= index < total`; `.viewNotFound`.
    public func album(view id: ViewID, at index: Int) throws(LibraryError) -> ViewAlbum {
        let view = try self.view(id)
        return try reading(view) { readers in
            let layout = CompositeIndex(counts: try readers.map { try $0.count() })
            guard let (source, local) = layout.decompose(index), let album = try readers[source].album(at: local) else {
                throw LibraryError.indexOutOfRange(index: index, count: layout.total)
            }
            return ViewAlbum(album: album, index: index, library: view.sources[source], libraryIndex: local)
        }
    }

    /// Deletes the album at view index `index` in the library that holds it, through that
    /// library's facade: its undo stack gets the command, its feed and events the change.
    ///
    /// The index is resolved in one snapshot and the album then deleted by id, so a change
    /// committed in between never deletes another album than the one at `index` then (if that
    /// album is gone by then: `.notFound`).
    /// - Throws: `.indexOutOfRange`, `.viewNotFound`, `.notFound`.
    @discardableResult
    public func delete(view id: ViewID, at index: Int) throws(LibraryError) -> ViewAlbum {
        let target = try album(view: id, at: index)
        let deleted = try facade(target.library).delete(id: target.album.id)
        return ViewAlbum(album: deleted.album, index: target.index - target.libraryIndex + deleted.index,
                         library: target.library, libraryIndex: deleted.index)
    }

    /// Adds an album through view `id`, into the library that owns view index `index` (see
    /// `CompositeIndex.insertion(at:)`: inside a source there; on a boundary between sources at
    /// the end of the earlier one; nil or past the end at the end of the last source), through
    /// that library's facade (undo, feed and events are that library's).
    ///
    /// The place is resolved in one snapshot; a change committed before the insert may shift
    /// where the album lands by as much (it stays in the library chosen).
    /// - Throws: `.indexOutOfRange` for a negative index; `.viewNotFound`; `.conflict` for a
    ///   view left without sources; `.invalid` for a bad client name.
    public func add(view id: ViewID, input: AlbumInput, at index: Int? = nil, client: String = ClientName.default)
        throws(LibraryError) -> ViewAlbum
    {
        let view = try self.view(id)
        guard !view.sources.isEmpty else {
            throw .conflict("the view \"\(id)\" has no sources (they were deleted); give it sources with PATCH first")
        }
        let layout = try reading(view) { readers in CompositeIndex(counts: try readers.map { try $0.count() }) }
        // No index: the end of the last source (an index equal to the total would go to the end
        // of the first source whose end reaches it, an earlier one when the last are empty).
        let (source, local) = try index.map { index throws(LibraryError) in try layout.insertion(at: index) }
            ?? (layout.counts.count - 1, layout.counts[layout.counts.count - 1])
        let added = try facade(view.sources[source]).add(input, at: local, client: client)
        return ViewAlbum(album: added.album, index: layout.adduce(source: source, local: added.index), library: view.sources[source],
                         libraryIndex: added.index)
    }

    // MARK: - Helpers

    /// The definitions: from memory, read once; on a shared store read every call (another
    /// instance may have changed them).
    func knownViews() throws(LibraryError) -> [ViewID: ViewDefinition] {
        do {
            if isShared {
                let views = try store.views()
                viewCache.noteRevisions(views)
                return Dictionary(views.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
            }
            return try viewCache.all { try store.views() }
        } catch {
            throw LibraryFacade.libraryError(from: error)
        }
    }

    /// Saves `view` by compare-and-set (see `AlbumStore.saveView(_:expecting:)`) and records
    /// it in memory when it was saved.
    func save(_ view: ViewDefinition, expecting previousRevision: Int64?) throws(LibraryError) -> Bool {
        let saved: Bool
        do {
            saved = try store.saveView(view, expecting: previousRevision)
        } catch {
            throw LibraryFacade.libraryError(from: error)
        }
        if saved { viewCache.set(view.id, view) } else { viewCache.noteRevisions([view]) }
        return saved
    }

    private func checkSources(_ sources: [LibraryID]) throws(LibraryError) {
        func invalid(_ message: String) -> LibraryError {
            .invalid(ValidationFailure([FieldError(field: "sources", message: message)]))
        }
        guard (1...Self.maxViewSources).contains(sources.count) else {
            throw invalid("sources must name 1 to \(Self.maxViewSources) libraries (got \(sources.count))")
        }
        var seen: Set<LibraryID> = []
        for source in sources where !seen.insert(source).inserted {
            throw invalid("sources must not name a library twice (\"\(source)\" is there more than once)")
        }
        let existing: Set<LibraryID>
        do {
            existing = Set(try store.libraries().map(\.id))
        } catch {
            throw LibraryFacade.libraryError(from: error)
        }
        let unknown = sources.filter { !existing.contains($0) }
        guard unknown.isEmpty else {
            throw invalid("sources must be existing libraries; there is no library "
                + unknown.map { "\"\($0)\"" }.joined(separator: ", ") + " (GET /libraries lists them)")
        }
    }

    /// Runs `body` on one snapshot of the view's sources.
    private func reading<T>(_ view: ViewDefinition, _ body: ([any AlbumStoreReader]) throws -> T) throws(LibraryError) -> T {
        do {
            return try store.read(view.sources, body)
        } catch {
            throw LibraryFacade.libraryError(from: error)
        }
    }
}
