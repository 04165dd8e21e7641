// TEMPORARY (issue 13 skeleton): replaced by the store helper's real implementation.
import Library

struct CatalogPending: Error {}

extension InMemoryAlbumStore {
    public func read<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreReader]) throws -> T) throws -> T {
        guard libraries.count == 1 else { throw CatalogPending() }
        return try read(libraries[0]) { try body([$0]) }
    }
    public func write<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreWriter]) throws -> T) throws -> T {
        guard libraries.count == 1 else { throw CatalogPending() }
        return try write(libraries[0]) { try body([$0]) }
    }
    public func libraries() throws -> [LibraryRecord] { throw CatalogPending() }
    public func createLibrary(_ id: LibraryID, name: String) throws -> LibraryRecord { throw CatalogPending() }
    public func renameLibrary(_ id: LibraryID, name: String) throws -> LibraryRecord { throw CatalogPending() }
    public func deleteLibrary(_ id: LibraryID) throws { throw CatalogPending() }
    public func views() throws -> [ViewDefinition] { throw CatalogPending() }
    public func saveView(_ view: ViewDefinition) throws { throw CatalogPending() }
    public func deleteView(_ id: ViewID) throws -> Bool { throw CatalogPending() }
}

extension InMemoryAlbumStore.Transaction {
    func library(of id: AlbumID) throws -> LibraryID? { throw CatalogPending() }
}
