import Library
import Synchronization

/// One instance's view of a store that several instances share: forwards everything to
/// `base` and reports ``AlbumStore/isShared``, so a registry or facade on it must not trust
/// what it remembers. Two views on one `InMemoryAlbumStore` are two instances on one
/// database: what one commits, the other's memory never learns.
public struct SharedStoreView: AlbumStore {
    public let base: any AlbumStore
    /// `versions(of:)` calls so far (the one statement a shared request costs).
    public let versionReads = CallCounter()
    /// Runs once, just before this instance's next compare-and-set of a view definition: what
    /// another instance commits between this one's read and its save.
    public let beforeNextViewSave = OneShot()

    public init(_ base: any AlbumStore) {
        self.base = base
    }

    public var isShared: Bool { true }

    public func versions(of libraries: [LibraryID]) throws -> [Int64] {
        versionReads.increment()
        return try base.versions(of: libraries)
    }

    public func read<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreReader]) throws -> T) throws -> T {
        try base.read(libraries, body)
    }

    public func write<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreWriter]) throws -> T) throws -> T {
        try base.write(libraries, body)
    }

    public func libraries() throws -> [LibraryRecord] { try base.libraries() }
    public func createLibrary(_ id: LibraryID, name: String) throws -> LibraryRecord { try base.createLibrary(id, name: name) }
    public func renameLibrary(_ id: LibraryID, name: String) throws -> LibraryRecord { try base.renameLibrary(id, name: name) }
    public func deleteLibrary(_ id: LibraryID, onlyIfEmpty: Bool) throws { try base.deleteLibrary(id, onlyIfEmpty: onlyIfEmpty) }
    public func views() throws -> [ViewDefinition] { try base.views() }
    public func saveView(_ view: ViewDefinition) throws { try base.saveView(view) }
    public func saveView(_ view: ViewDefinition, expecting previousRevision: Int64?) throws -> Bool {
        beforeNextViewSave.run()
        return try base.saveView(view, expecting: previousRevision)
    }
    public func deleteView(_ id: ViewID) throws -> Bool { try base.deleteView(id) }
}

/// A thread-safe count.
public final class CallCounter: Sendable {
    private let value = Mutex(0)
    public init() {}
    public func increment() { value.withLock { $0 += 1 } }
    public var count: Int { value.withLock { $0 } }
}

/// An action run at most once, by whoever calls ``run()`` first after ``set(_:)``.
public final class OneShot: Sendable {
    private let action = Mutex<(@Sendable () -> Void)?>(nil)
    public init() {}
    public func set(_ body: @escaping @Sendable () -> Void) { action.withLock { $0 = body } }
    public func run() { action.withLock { action in defer { action = nil }; return action }?() }
}
