import Foundation

extension ArchiveDocument {
    /// Stop collecting problems after this many, so a broken million-album file gives a
    /// readable error rather than a million lines.
    public static let maximumReportedProblems = 100

    static let topLevelKeys = ["format", "formatVersion", "exportedAt", "library", "version", "albums", "states"]
    static let albumKeys = ["id"] + AlbumInput.fieldNames + ["createdAt", "updatedAt"]
    static let stateKeys = ["client", "currentAlbumIndex", "albumID", "updatedAt"]

    /// Parses and fully validates an archive, before anything is imported.
    ///
    /// Checks, in order: JSON syntax; `format` and `formatVersion` (an unknown version stops
    /// here, since the rest may have another shape); unknown top-level keys; every album with
    /// the same rules as on create plus a valid `id` and RFC 3339 `createdAt`/`updatedAt`;
    /// duplicate ids; every state (valid client, non-negative index, `albumID` of an album in
    /// the document, no client twice).
    ///
    /// - Throws: `LibraryError.malformed` for bad syntax or a non-object document;
    ///   `LibraryError.archiveInvalid` with problems named like `albums[3].year`.
    public static func parse(json bytes: [UInt8]) throws(LibraryError) -> ArchiveDocument {
        let object = try JSONObjectParser.object(
            from: bytes, what: "the archive",
            example: #"{"format": "bluelibrary.archive", "formatVersion": 1, "albums": []}"#)
        var parser = ArchiveParser()
        let document = parser.document(object)
        guard parser.problems.isEmpty, let document else { throw .archiveInvalid(parser.problems) }
        return document
    }
}

/// Walks an archive's JSON, collecting located problems.
private struct ArchiveParser {
    var problems: [ArchiveProblem] = []

    var full: Bool { problems.count >= ArchiveDocument.maximumReportedProblems }

    mutating func add(_ path: String, _ message: String, album: Int? = nil, field: String? = nil) {
        guard !full else { return }
        problems.append(ArchiveProblem(path: path, albumIndex: album, field: field, message: path + " " + message))
    }

    /// Copies the field errors of one album reader into located problems.
    mutating func add(_ reader: JSONFieldReader, album: Int?) {
        for error in reader.errors {
            guard !full else { return }
            problems.append(ArchiveProblem(
                path: error.field, albumIndex: album, field: String(error.field.dropFirst(reader.path.count)),
                message: error.message))
        }
    }

    mutating func document(_ object: [String: Any]) -> ArchiveDocument? {
        var top = JSONFieldReader(object)
        guard header(&top) else {
            add(top, album: nil)
            return nil
        }
        top.rejectUnknownKeys(known: ArchiveDocument.topLevelKeys)
        var exportedAt: Date?
        if case .value(let value) = top.field("exportedAt") {
            exportedAt = timestamp("exportedAt", value, &top)
        }
        var library: String?
        if case .value(let value) = top.field("library") {
            library = top.string("library", value, hint: "a string")
        }
        var version: Int64?
        if case .value(let value) = top.field("version") {
            if let number = JSONValueKind.integer(value), number >= 0 {
                version = Int64(number)
            } else {
                top.fail("version", "must be an integer of 0 or more (got \(JSONValueKind.describe(value)))")
            }
        }
        add(top, album: nil)
        let albums = self.albums(object["albums"])
        let states = self.states(object["states"], albumIDs: Set(albums.map(\.id)))
        guard problems.isEmpty else { return nil }
        return ArchiveDocument(
            formatVersion: ArchiveDocument.currentFormatVersion, exportedAt: exportedAt, library: library,
            version: version, albums: albums, states: states)
    }

    /// Checks `format` and `formatVersion`; false when the rest must not be read.
    private func header(_ top: inout JSONFieldReader) -> Bool {
        guard case .value(let format) = top.field("format"), let name = format as? String,
              name == ArchiveDocument.formatName else {
            let got = top.object["format"].map(JSONValueKind.describe) ?? "nothing"
            top.fail("format", "must be \"\(ArchiveDocument.formatName)\" (got \(got)); is this a BlueLibrary archive?")
            return false
        }
        guard case .value(let versionValue) = top.field("formatVersion"),
              let formatVersion = JSONValueKind.integer(versionValue) else {
            top.fail("formatVersion", "must be the integer \(ArchiveDocument.currentFormatVersion)")
            return false
        }
        guard formatVersion == ArchiveDocument.currentFormatVersion else {
            top.fail("formatVersion", "\(formatVersion) is not supported: this server reads formatVersion "
                + "\(ArchiveDocument.currentFormatVersion); export the archive again from a matching server")
            return false
        }
        return true
    }

    private mutating func albums(_ value: Any?) -> [Album] {
        guard let items = value as? [Any] else {
            add("albums", "must be an array of albums (got \(value.map(JSONValueKind.describe) ?? "nothing"))", field: "albums")
            return []
        }
        var albums: [Album] = []
        albums.reserveCapacity(items.count)
        var firstIndexOfID: [AlbumID: Int] = [:]
        for (index, item) in items.enumerated() {
            if full { break }
            guard let album = self.album(item, index: index) else { continue }
            if let first = firstIndexOfID[album.id] {
                add("albums[\(index)].id", "duplicates albums[\(first)].id (\(album.id)); every album needs its own id",
                    album: index, field: "id")
                continue
            }
            firstIndexOfID[album.id] = index
            albums.append(album)
        }
        return albums
    }

    private mutating func album(_ item: Any, index: Int) -> Album? {
        let path = "albums[\(index)]"
        guard let object = item as? [String: Any] else {
            add(path, "must be an object (got \(JSONValueKind.describe(item)))", album: index)
            return nil
        }
        var reader = JSONFieldReader(object, path: path + ".")
        reader.rejectUnknownKeys(known: ArchiveDocument.albumKeys)
        var id: AlbumID?
        switch reader.field("id") {
        case .value(let value):
            if let text = reader.string("id", value, hint: "an album id string") {
                id = AlbumID(text)
                if id == nil { reader.fail("id", "is not an album id (26 characters of Crockford base32) (got \"\(text)\")") }
            }
        case .absent, .null:
            reader.fail("id", "is required; every archived album keeps its id")
        }
        let input = AlbumInput.read(from: &reader)
        let createdAt = requiredTimestamp("createdAt", &reader)
        let updatedAt = requiredTimestamp("updatedAt", &reader)
        add(reader, album: index)
        guard reader.errors.isEmpty, let id, let input, let createdAt, let updatedAt else { return nil }
        var album = Album(id: id, input: input, createdAt: createdAt)
        album.updatedAt = updatedAt
        return album
    }

    private mutating func states(_ value: Any?, albumIDs: Set<AlbumID>) -> [SavedState] {
        guard let value, !(value is NSNull) else { return [] }
        guard let items = value as? [Any] else {
            add("states", "must be an array of saved states (got \(JSONValueKind.describe(value)))", field: "states")
            return []
        }
        var states: [SavedState] = []
        var seenClients: Set<String> = []
        for (index, item) in items.enumerated() {
            if full { break }
            let path = "states[\(index)]"
            guard let object = item as? [String: Any] else {
                add(path, "must be an object (got \(JSONValueKind.describe(item)))")
                continue
            }
            var reader = JSONFieldReader(object, path: path + ".")
            reader.rejectUnknownKeys(known: ArchiveDocument.stateKeys)
            var client: String?
            switch reader.field("client") {
            case .absent, .null:
                reader.fail("client", "is required: a client name like \"default\"")
            case .value(let value):
                guard let name = reader.string("client", value, hint: "a string") else { break }
                if (try? ClientName.validate(name)) == nil {
                    reader.fail("client", "must be 1 to \(ClientName.maximumLength) letters, digits, '.', '_' or '-' (got \"\(name)\")")
                } else if !seenClients.insert(name).inserted {
                    reader.fail("client", "\"\(name)\" appears twice; keep one state per client")
                } else {
                    client = name
                }
            }
            var currentIndex: Int?
            if case .value(let value) = reader.field("currentAlbumIndex"), let number = JSONValueKind.integer(value), number >= 0 {
                currentIndex = number
            } else {
                reader.fail("currentAlbumIndex", "must be an integer of 0 or more")
            }
            var albumID: AlbumID?
            if case .value(let value) = reader.field("albumID") {
                if let text = value as? String, let id = AlbumID(text), albumIDs.contains(id) {
                    albumID = id
                } else {
                    reader.fail("albumID", "must be null or the id of an album in this archive")
                }
            }
            var updatedAt: Date?
            if case .value(let value) = reader.field("updatedAt") {
                updatedAt = timestamp("updatedAt", value, &reader)
            }
            add(reader, album: nil)
            if reader.errors.isEmpty, let client, let currentIndex {
                states.append(SavedState(client: client, currentAlbumIndex: currentIndex, albumID: albumID, updatedAt: updatedAt))
            }
        }
        return states
    }

    private func requiredTimestamp(_ key: String, _ reader: inout JSONFieldReader) -> Date? {
        guard case .value(let value) = reader.field(key) else {
            reader.fail(key, "is required: an RFC 3339 timestamp like \"2024-05-01T12:00:00.000Z\"")
            return nil
        }
        return timestamp(key, value, &reader)
    }

    private func timestamp(_ key: String, _ value: Any, _ reader: inout JSONFieldReader) -> Date? {
        guard let text = value as? String, let date = Timestamp.parse(text) else {
            reader.fail(key, "must be an RFC 3339 timestamp like \"2024-05-01T12:00:00.000Z\" (got \(JSONValueKind.describe(value)))")
            return nil
        }
        return date
    }
}
