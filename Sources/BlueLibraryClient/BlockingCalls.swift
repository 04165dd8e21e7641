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
    public func list(_ query: AlbumPageQuery = AlbumPageQuery()) throws(BlueLibraryClientError) -> AlbumPage {
        try wait(listCall(query))
    }

    public func list(_ query: AlbumPageQuery, ifNoneMatch etag: String?) throws(BlueLibraryClientError) -> Revalidated<AlbumPage> {
        try wait(listCall(query, ifNoneMatch: etag))
    }

    public func album(id: String) throws(BlueLibraryClientError) -> AlbumResource { try wait(albumCall(id: id)) }

    public func album(at index: Int) throws(BlueLibraryClientError) -> AlbumResource { try wait(albumCall(at: index)) }

    public func add(_ input: AlbumInput, at index: Int? = nil, client: String? = nil,
                    idempotencyKey: String? = nil) throws(BlueLibraryClientError) -> AlbumResource {
        try wait(addCall(input, at: index, client: client, idempotencyKey: idempotencyKey))
    }

    public func delete(id: String) throws(BlueLibraryClientError) -> AlbumResource { try wait(deleteCall(id: id)) }

    public func delete(at index: Int) throws(BlueLibraryClientError) -> AlbumResource { try wait(deleteCall(at: index)) }

    public func move(id: String, to index: Int) throws(BlueLibraryClientError) -> AlbumResource {
        try wait(moveCall(id: id, to: index))
    }

    public func undo(client: String? = nil) throws(BlueLibraryClientError) -> UndoResultResource { try wait(undoCall(client: client)) }

    public func undoStatus() throws(BlueLibraryClientError) -> UndoStatusResource { try wait(undoStatusCall()) }

    public func state(client: String? = nil) throws(BlueLibraryClientError) -> SavedStateResource { try wait(stateCall(client: client)) }

    public func setState(_ target: StateTarget, client: String? = nil) throws(BlueLibraryClientError) -> SavedStateResource {
        try wait(setStateCall(target, client: client))
    }
}
