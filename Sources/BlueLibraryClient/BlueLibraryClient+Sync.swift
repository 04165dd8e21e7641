#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation

/// The calls a replica syncs with: the change feed and field edits.
extension BlueLibraryClient {
    /// `GET /changes?since=&limit=` (or a library's): the changes after `since`, oldest first.
    /// A `since` older than what the server keeps is `.problem` with status 410 (reload everything).
    public func changes(since: Int64, limit: Int? = nil, in library: String = AlbumListSource.defaultLibraryID)
        async throws(BlueLibraryClientError) -> ChangePageResource
    {
        try await send(changesCall(since: since, limit: limit, in: library))
    }

    /// `PATCH /albums/{id}`: a JSON merge patch of the album's fields (only the fields set in
    /// `patch` change); answers the album with its index.
    /// With `ifMatch` (the album's ETag as a read gave it), the patch applies only while the
    /// album is unchanged since (412 otherwise).
    public func update(id: String, _ patch: AlbumPatchInput, in library: String = AlbumListSource.defaultLibraryID,
                       ifMatch: String? = nil) async throws(BlueLibraryClientError) -> AlbumResource
    {
        try await send(updateCall(id: id, patch, in: library, ifMatch: ifMatch))
    }

    func changesCall(since: Int64, limit: Int?, in library: String) throws(BlueLibraryClientError) -> Call<ChangePageResource> {
        var query: [(name: String, value: String)] = [("since", String(since))]
        if let limit { query.append(("limit", String(limit))) }
        return try call("GET", path(library, "changes"), query: query)
    }

    func updateCall(id: String, _ patch: AlbumPatchInput, in library: String, ifMatch: String? = nil)
        throws(BlueLibraryClientError) -> Call<AlbumResource>
    {
        try call("PATCH", path(library, "albums", id), json: patch.mergePatch, headers: ifMatch.map { ["If-Match": $0] } ?? [:])
    }
}

/// One entry of the change feed: `kind` is `added`, `updated`, `deleted`, `moved` or
/// `replaced` (reload everything; no `id` nor `index`). `index` is the album's index after the
/// change (for `deleted`: the index it had); `from` the index before a move.
public struct ChangeResource: Codable, Sendable, Hashable {
    public var version: Int64
    public var kind: String
    public var id: String?
    public var index: Int?
    public var from: Int?
    public var movedFrom: String?
    public var movedTo: String?
}

/// `GET /changes`: `{"changes": [...], "next": version, "more": bool}`; ask again with
/// `since=next` while `more` is true.
public struct ChangePageResource: Codable, Sendable, Hashable {
    public var changes: [ChangeResource]
    public var next: Int64
    public var more: Bool
}

/// `PATCH /albums/{id}`: the fields to change; nil fields are left out of the merge patch and
/// stay as they are on the server. Fields in `cleared` are sent as `null`: `year` and
/// `coverUrl` become absent, `genre` returns to "Pop" (a field both set and cleared is cleared).
public struct AlbumPatchInput: Codable, Sendable, Hashable {
    /// The fields a patch can clear.
    public enum ClearableField: String, Codable, Sendable, Hashable, CaseIterable {
        case genre, year, coverUrl
    }

    public var title: String?
    public var artist: String?
    public var genre: String?
    public var year: Int?
    public var coverUrl: String?
    public var cleared: Set<ClearableField>

    public init(title: String? = nil, artist: String? = nil, genre: String? = nil, year: Int? = nil, coverUrl: String? = nil,
                clearing cleared: Set<ClearableField> = []) {
        self.title = title
        self.artist = artist
        self.genre = genre
        self.year = year
        self.coverUrl = coverUrl
        self.cleared = cleared
    }

    /// `album` with this patch's fields put in (cleared ones as the server clears them).
    public func applied(to album: AlbumResource) -> AlbumResource {
        var album = album
        if let title { album.title = title }
        if let artist { album.artist = artist }
        if let genre { album.genre = genre }
        if let year { album.year = year }
        if let coverUrl { album.coverUrl = coverUrl }
        if cleared.contains(.genre) { album.genre = "Pop" }
        if cleared.contains(.year) { album.year = nil }
        if cleared.contains(.coverUrl) { album.coverUrl = nil }
        return album
    }

    /// The JSON merge patch as sent: set fields with their values, cleared ones as `null`.
    var mergePatch: MergePatch { MergePatch(patch: self) }

    struct MergePatch: Encodable {
        let patch: AlbumPatchInput

        enum CodingKeys: String, CodingKey { case title, artist, genre, year, coverUrl }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(patch.title, forKey: .title)
            try container.encodeIfPresent(patch.artist, forKey: .artist)
            if patch.cleared.contains(.genre) { try container.encodeNil(forKey: .genre) } else { try container.encodeIfPresent(patch.genre, forKey: .genre) }
            if patch.cleared.contains(.year) { try container.encodeNil(forKey: .year) } else { try container.encodeIfPresent(patch.year, forKey: .year) }
            if patch.cleared.contains(.coverUrl) {
                try container.encodeNil(forKey: .coverUrl)
            } else {
                try container.encodeIfPresent(patch.coverUrl, forKey: .coverUrl)
            }
        }
    }
}
