#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import BlueLibraryAPI
import Foundation

/// API keys (`/keys`): list, create, read, change, revoke, and `GET /keys/self` (who the
/// server takes this client for). Every call but ``whoAmI()`` needs an admin key for every
/// library; a weaker key gets `.problem` with status 403. Both faces, like every call: these
/// are the `async` ones, the blocking ones are in `BlockingCalls.swift`.
///
/// A key is sent as the client's token (`init(baseURL:timeout:token:)` or a `tokenProvider`):
/// `Authorization: Bearer <key>`, like the passcode of earlier versions (the admin key `token`).
extension BlueLibraryClient {
    /// `GET /keys`: every key (never its secret), ordered by id.
    public func keys() async throws(BlueLibraryClientError) -> [KeyResource] {
        try await send(keysCall())
    }

    /// `POST /keys`: a new key. The answer's `secret` is the whole key to send as
    /// `Authorization: Bearer`, shown this once (the server keeps only its hash).
    /// `libraries` nil: every library; `expiresAt` nil: never. 422 naming the field for an
    /// empty name or scope list, a bad library id or an expiry in the past.
    public func createKey(name: String, scopes: [KeyScope], libraries: [String]? = nil, expiresAt: Date? = nil)
        async throws(BlueLibraryClientError) -> KeyResource
    {
        try await send(createKeyCall(name: name, scopes: scopes, libraries: libraries, expiresAt: expiresAt))
    }

    /// `GET /keys/{id}`: one key (404 when there is none).
    public func key(id: String) async throws(BlueLibraryClientError) -> KeyResource {
        try await send(keyCall(id: id))
    }

    /// `PATCH /keys/{id}`: changes only what is given (the secret stays). `libraries: .all`
    /// lifts a library restriction, `expiresAt: .never` an expiry. 409 `last-admin-key` when
    /// the lock is on and no admin key for every library would be left.
    public func updateKey(id: String, name: String? = nil, scopes: [KeyScope]? = nil, libraries: KeyLibraries? = nil,
                          expiresAt: KeyExpiry? = nil) async throws(BlueLibraryClientError) -> KeyResource {
        try await send(updateKeyCall(id: id, KeyChange(name: name, scopes: scopes, libraries: libraries, expiresAt: expiresAt)))
    }

    /// `DELETE /keys/{id}`: the key stops working at once (on other instances within a
    /// second). 409 `last-admin-key` as for ``updateKey(id:name:scopes:libraries:expiresAt:)``.
    public func deleteKey(id: String) async throws(BlueLibraryClientError) {
        try await send(deleteKeyCall(id: id))
    }

    /// `GET /keys/self`: the key this client sends (nil without one, or when the lock is off),
    /// the scopes and libraries it may use now, and whether the lock is on.
    public func whoAmI() async throws(BlueLibraryClientError) -> KeySelfResource {
        try await send(whoAmICall())
    }

    // MARK: - Calls

    func keysCall() throws(BlueLibraryClientError) -> Call<[KeyResource]> {
        let list: Call<KeyListResource> = try keyRead(["keys"])
        return Call(request: list.request, read: { answer throws(BlueLibraryClientError) in try list.read(answer).keys })
    }

    func createKeyCall(name: String, scopes: [KeyScope], libraries: [String]?, expiresAt: Date?)
        throws(BlueLibraryClientError) -> Call<KeyResource>
    {
        let body = KeyCreation(name: name, scopes: scopes, libraries: libraries, expiresAt: expiresAt)
        return Self.keyCall(try request("POST", ["keys"], json: body))
    }

    func keyCall(id: String) throws(BlueLibraryClientError) -> Call<KeyResource> { try keyRead(["keys", id]) }

    func updateKeyCall(id: String, _ change: KeyChange) throws(BlueLibraryClientError) -> Call<KeyResource> {
        Self.keyCall(try request("PATCH", ["keys", id], json: change))
    }

    func deleteKeyCall(id: String) throws(BlueLibraryClientError) -> Call<Void> { try emptyCall("DELETE", ["keys", id]) }

    func whoAmICall() throws(BlueLibraryClientError) -> Call<KeySelfResource> { try keyRead(["keys", "self"]) }

    /// A `GET` whose answer holds keys (their times are RFC 3339 text).
    private func keyRead<Value: Decodable>(_ path: [String]) throws(BlueLibraryClientError) -> Call<Value> {
        Self.keyCall(try request("GET", path))
    }

    /// A call whose 2xx answer is `Value` as JSON with RFC 3339 times (any other status throws).
    private static func keyCall<Value: Decodable>(_ request: URLRequest) -> Call<Value> {
        Call(request: request, read: { answer throws(BlueLibraryClientError) in try readKeyAnswer(answer) })
    }

    private static func readKeyAnswer<Value: Decodable>(_ answer: Answer) throws(BlueLibraryClientError) -> Value {
        guard answer.status < 400 else { throw failure(answer) }
        guard (200..<300).contains(answer.status) else {
            throw .decoding(status: answer.status, message: "expected a 2xx answer with a JSON body")
        }
        do {
            return try KeyTime.decoder().decode(Value.self, from: answer.body)
        } catch {
            throw .decoding(status: answer.status, message: describe(error))
        }
    }
}
