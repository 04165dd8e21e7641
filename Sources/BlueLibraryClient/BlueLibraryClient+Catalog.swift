#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation

/// Libraries (`/libraries`) and composite views (`/views`): list, create, update, delete.
/// The albums in them are read and changed with the album calls and `in:` (`.library(id)` or
/// `.view(id)`). Both faces, like every call: these are the `async` ones, the blocking ones
/// are in `BlockingCalls.swift`.
extension BlueLibraryClient {
    // MARK: - Libraries

    /// `GET /libraries`: every library, ordered by id.
    public func libraries() async throws(BlueLibraryClientError) -> [LibraryResource] {
        try await send(librariesCall())
    }

    /// `GET /libraries/{id}`: one library with its album count and version (404 when there is none).
    public func library(_ id: String) async throws(BlueLibraryClientError) -> LibraryResource {
        try await send(libraryCall(id))
    }

    /// `POST /libraries`: creates an empty library; `name` defaults to the id. 422 (field `id`)
    /// for an id that is not `[a-z0-9-]{1,40}`, 409 when the id is taken.
    public func createLibrary(id: String, name: String? = nil) async throws(BlueLibraryClientError) -> LibraryResource {
        try await send(createLibraryCall(id: id, name: name))
    }

    /// `PATCH /libraries/{id}`: gives the library a new display name (its id never changes).
    public func renameLibrary(_ id: String, to name: String) async throws(BlueLibraryClientError) -> LibraryResource {
        try await send(renameLibraryCall(id, to: name))
    }

    /// `DELETE /libraries/{id}`: 409 for `default`, and without `force` for a library that holds
    /// albums or that views use (with `force`, its albums go and the views stop showing it).
    public func deleteLibrary(_ id: String, force: Bool = false) async throws(BlueLibraryClientError) {
        try await send(deleteLibraryCall(id, force: force))
    }

    // MARK: - Views

    /// `GET /views`: every view.
    public func views() async throws(BlueLibraryClientError) -> [ViewResource] {
        try await send(viewsCall())
    }

    /// `GET /views/{id}`: one view with its sources' versions (404 when there is none).
    public func view(_ id: String) async throws(BlueLibraryClientError) -> ViewResource {
        try await send(viewCall(id))
    }

    /// `POST /views`: creates a view. 422 (field `sources`) for an unknown, repeated or missing
    /// source; 409 when the id is taken.
    public func createView(_ input: ViewInput) async throws(BlueLibraryClientError) -> ViewResource {
        try await send(createViewCall(input))
    }

    /// `PATCH /views/{id}`: changes what `update` gives (the revision grows by one).
    public func updateView(_ id: String, _ update: ViewUpdate) async throws(BlueLibraryClientError) -> ViewResource {
        try await send(updateViewCall(id, update))
    }

    /// `DELETE /views/{id}`: the view goes; its libraries and albums stay.
    public func deleteView(_ id: String) async throws(BlueLibraryClientError) {
        try await send(deleteViewCall(id))
    }

    // MARK: - Calls

    func librariesCall() throws(BlueLibraryClientError) -> Call<[LibraryResource]> {
        let list: Call<LibraryListResource> = try call("GET", ["libraries"])
        return Call(request: list.request, read: { answer throws(BlueLibraryClientError) in try list.read(answer).libraries })
    }

    func libraryCall(_ id: String) throws(BlueLibraryClientError) -> Call<LibraryResource> { try call("GET", ["libraries", id]) }

    func createLibraryCall(id: String, name: String?) throws(BlueLibraryClientError) -> Call<LibraryResource> {
        var body = ["id": id]
        if let name { body["name"] = name }
        return try call("POST", ["libraries"], json: body)
    }

    func renameLibraryCall(_ id: String, to name: String) throws(BlueLibraryClientError) -> Call<LibraryResource> {
        try call("PATCH", ["libraries", id], json: ["name": name])
    }

    func deleteLibraryCall(_ id: String, force: Bool) throws(BlueLibraryClientError) -> Call<Void> {
        try emptyCall("DELETE", ["libraries", id], query: force ? [("force", "true")] : [])
    }

    func viewsCall() throws(BlueLibraryClientError) -> Call<[ViewResource]> {
        let list: Call<ViewListResource> = try call("GET", ["views"])
        return Call(request: list.request, read: { answer throws(BlueLibraryClientError) in try list.read(answer).views })
    }

    func viewCall(_ id: String) throws(BlueLibraryClientError) -> Call<ViewResource> { try call("GET", ["views", id]) }

    func createViewCall(_ input: ViewInput) throws(BlueLibraryClientError) -> Call<ViewResource> {
        try call("POST", ["views"], json: input)
    }

    func updateViewCall(_ id: String, _ update: ViewUpdate) throws(BlueLibraryClientError) -> Call<ViewResource> {
        try call("PATCH", ["views", id], json: update)
    }

    func deleteViewCall(_ id: String) throws(BlueLibraryClientError) -> Call<Void> { try emptyCall("DELETE", ["views", id]) }

    /// A call whose answer has no body that matters: any 2xx succeeds, an error status throws its problem.
    func emptyCall(_ method: String, _ path: [String], query: [(name: String, value: String)] = [])
        throws(BlueLibraryClientError) -> Call<Void>
    {
        Call(request: try request(method, path, query: query), read: { answer throws(BlueLibraryClientError) in
            guard answer.status < 400 else { throw Self.failure(answer) }
            guard (200..<300).contains(answer.status) else {
                throw .decoding(status: answer.status, message: "expected a 2xx answer")
            }
        })
    }
}
