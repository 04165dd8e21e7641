#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation

/// The blocking face of `BlueLibraryClient`: each call has the same name, arguments and result
/// as its `async` counterpart (see there for what it does) and runs the same `Call`, but blocks
/// the calling thread until the answer comes or the client's timeout passes. For command-line
/// tools and other code without `async`; never call these from `async` code (use `await` and
/// the async calls there) or from a thread the answer needs.
extension BlueLibraryClient {
    public func list(_ query: AlbumPageQuery = AlbumPageQuery(), in source: AlbumListSource = .defaultLibrary)
        throws(BlueLibraryClientError) -> AlbumPage
    {
        try wait(listCall(query, in: source))
    }

    public func list(_ query: AlbumPageQuery, in source: AlbumListSource = .defaultLibrary, ifNoneMatch etag: String?)
        throws(BlueLibraryClientError) -> Revalidated<AlbumPage>
    {
        try wait(listCall(query, in: source, ifNoneMatch: etag))
    }

    public func album(id: String, in library: String = AlbumListSource.defaultLibraryID) throws(BlueLibraryClientError) -> AlbumResource {
        try wait(albumCall(id: id, in: library))
    }

    public func album(at index: Int, in source: AlbumListSource = .defaultLibrary) throws(BlueLibraryClientError) -> AlbumResource {
        try wait(albumCall(at: index, in: source))
    }

    public func add(_ input: AlbumInput, at index: Int? = nil, in source: AlbumListSource = .defaultLibrary, client: String? = nil,
                    idempotencyKey: String? = nil) throws(BlueLibraryClientError) -> AlbumResource {
        try wait(addCall(input, at: index, in: source, client: client, idempotencyKey: idempotencyKey))
    }

    public func delete(id: String, in library: String = AlbumListSource.defaultLibraryID) throws(BlueLibraryClientError) -> AlbumResource {
        try wait(deleteCall(id: id, in: library))
    }

    public func delete(at index: Int, in source: AlbumListSource = .defaultLibrary) throws(BlueLibraryClientError) -> AlbumResource {
        try wait(deleteCall(at: index, in: source))
    }

    public func move(id: String, to index: Int, in library: String = AlbumListSource.defaultLibraryID)
        throws(BlueLibraryClientError) -> AlbumResource
    {
        try wait(moveCall(id: id, to: index, in: library))
    }

    public func move(id: String, from library: String = AlbumListSource.defaultLibraryID, toLibrary target: String,
                     at index: Int? = nil) throws(BlueLibraryClientError) -> AlbumResource {
        try wait(moveCall(id: id, from: library, toLibrary: target, at: index))
    }

    public func update(id: String, _ patch: AlbumPatchInput, in library: String = AlbumListSource.defaultLibraryID,
                       ifMatch: String? = nil) throws(BlueLibraryClientError) -> AlbumResource {
        try wait(updateCall(id: id, patch, in: library, ifMatch: ifMatch))
    }

    public func batch(json operations: [Data], atomic: Bool = true, in library: String = AlbumListSource.defaultLibraryID,
                      idempotencyKey: String? = nil) throws(BlueLibraryClientError) -> BatchAnswer {
        try wait(batchCall(json: operations, atomic: atomic, in: library, idempotencyKey: idempotencyKey))
    }

    public func undo(client: String? = nil, in library: String = AlbumListSource.defaultLibraryID)
        throws(BlueLibraryClientError) -> UndoResultResource
    {
        try wait(undoCall(client: client, in: library))
    }

    public func undoStatus(in library: String = AlbumListSource.defaultLibraryID) throws(BlueLibraryClientError) -> UndoStatusResource {
        try wait(undoStatusCall(in: library))
    }

    public func state(client: String? = nil, in library: String = AlbumListSource.defaultLibraryID)
        throws(BlueLibraryClientError) -> SavedStateResource
    {
        try wait(stateCall(client: client, in: library))
    }

    public func setState(_ target: StateTarget, client: String? = nil, in library: String = AlbumListSource.defaultLibraryID)
        throws(BlueLibraryClientError) -> SavedStateResource
    {
        try wait(setStateCall(target, client: client, in: library))
    }

    // MARK: Libraries and views

    public func libraries() throws(BlueLibraryClientError) -> [LibraryResource] { try wait(librariesCall()) }

    public func library(_ id: String) throws(BlueLibraryClientError) -> LibraryResource { try wait(libraryCall(id)) }

    public func createLibrary(id: String, name: String? = nil) throws(BlueLibraryClientError) -> LibraryResource {
        try wait(createLibraryCall(id: id, name: name))
    }

    public func renameLibrary(_ id: String, to name: String) throws(BlueLibraryClientError) -> LibraryResource {
        try wait(renameLibraryCall(id, to: name))
    }

    public func deleteLibrary(_ id: String, force: Bool = false) throws(BlueLibraryClientError) {
        try wait(deleteLibraryCall(id, force: force))
    }

    public func views() throws(BlueLibraryClientError) -> [ViewResource] { try wait(viewsCall()) }

    public func view(_ id: String) throws(BlueLibraryClientError) -> ViewResource { try wait(viewCall(id)) }

    public func createView(_ input: ViewInput) throws(BlueLibraryClientError) -> ViewResource { try wait(createViewCall(input)) }

    public func updateView(_ id: String, _ update: ViewUpdate) throws(BlueLibraryClientError) -> ViewResource {
        try wait(updateViewCall(id, update))
    }

    public func deleteView(_ id: String) throws(BlueLibraryClientError) { try wait(deleteViewCall(id)) }

    // MARK: Keys

    public func keys() throws(BlueLibraryClientError) -> [KeyResource] { try wait(keysCall()) }

    public func createKey(name: String, scopes: [KeyScope], libraries: [String]? = nil, expiresAt: Date? = nil)
        throws(BlueLibraryClientError) -> KeyResource
    {
        try wait(createKeyCall(name: name, scopes: scopes, libraries: libraries, expiresAt: expiresAt))
    }

    public func key(id: String) throws(BlueLibraryClientError) -> KeyResource { try wait(keyCall(id: id)) }

    public func updateKey(id: String, name: String? = nil, scopes: [KeyScope]? = nil, libraries: KeyLibraries? = nil,
                          expiresAt: KeyExpiry? = nil) throws(BlueLibraryClientError) -> KeyResource {
        try wait(updateKeyCall(id: id, KeyChange(name: name, scopes: scopes, libraries: libraries, expiresAt: expiresAt)))
    }

    public func deleteKey(id: String) throws(BlueLibraryClientError) { try wait(deleteKeyCall(id: id)) }

    public func whoAmI() throws(BlueLibraryClientError) -> KeySelfResource { try wait(whoAmICall()) }
}
