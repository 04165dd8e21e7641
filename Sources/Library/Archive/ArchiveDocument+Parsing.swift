import BlueLibraryAPI
import Essentials
import Foundation

extension ArchiveDocument {
    /// Stop collecting problems after this many, so a broken million-album file gives a
    /// readable error rather than a million lines.
    public static let maximumReportedProblems = 100

    /// The most saved states an archive may hold (one per client): more is refused as a
    /// whole, and the rest of the array is only syntax-checked, never kept.
    public static let maximumStates = 10_000

    /// The most members one object of the archive (the document, an album, a state) may have:
    /// its known keys fit many times over; more is refused and the rest only syntax-checked,
    /// so a single object with millions of keys cannot fill memory.
    public static let maximumMembersPerObject = 64

    static let topLevelKeys = ["format", "formatVersion", "exportedAt", "library", "version", "albums", "states"]
    static let albumKeys = ["id"] + AlbumInput.fieldNames + ["createdAt", "updatedAt"]
    static let stateKeys = ["client", "currentAlbumIndex", "albumID", "updatedAt"]

    static let example = #"{"format": "bluelibrary.archive", "formatVersion": 1, "albums": []}"#

    /// Parses and fully validates an archive, before anything is imported.
    ///
    /// Checks, in order: JSON syntax; `format` and `formatVersion` (an unknown version stops
    /// here, since the rest may have another shape); unknown top-level keys; every album with
    /// the same rules as on create plus a valid `id` and RFC 3339 `createdAt`/`updatedAt`;
    /// duplicate ids; every state (valid client, non-negative index, `albumID` of an album in
    /// the document, no client twice).
    ///
    /// The document is read in one pass with `JSONScanner`: each album goes straight from its
    /// bytes to the field rules, never through `[String: Any]`, so a million albums take
    /// seconds and little more memory than the albums themselves.
    ///
    /// - Throws: `LibraryError.malformed` for bad syntax or a non-object document;
    ///   `LibraryError.archiveInvalid` with problems named like `albums[3].year`.
    public static func parse(json bytes: [UInt8]) throws(LibraryError) -> ArchiveDocument {
        try bytes.withUnsafeBufferPointer { buffer throws(LibraryError) in try parse(buffer, albums: nil).document }
    }

    /// What ``parse(_:albums:)`` hands its album sink.
    enum AlbumEvent {
        /// Albums in document order, validated, ids unique so far; `read` is how many bytes of
        /// the document have been read (earlier bytes are not looked at again).
        case batch([Album], read: Int)
        /// A later `albums` key replaces the earlier one: forget the albums sent so far.
        case reset
    }

    /// Albums handed to a sink at a time.
    static let albumBatchSize = 1024

    /// Parses `buffer` like ``parse(json:)``; with a sink, the albums are handed to it in
    /// batches as they are read (while no album problem was found) instead of being kept, and
    /// the document's `albums` stays empty: memory stays at one batch whatever the archive's
    /// size. The sink must undo what it did when this throws.
    static func parse(_ buffer: UnsafeBufferPointer<UInt8>, albums sink: ((AlbumEvent) -> Void)?)
        throws(LibraryError) -> (document: ArchiveDocument, albumCount: Int)
    {
        guard buffer.contains(where: { !(0x20 == $0 || 0x0A == $0 || 0x0D == $0 || 0x09 == $0) }) else {
            throw .malformed("the archive is empty; send a JSON object")
        }
        let result = { () -> Result<(document: ArchiveDocument, albumCount: Int), LibraryError> in
            var scanner = JSONScanner(buffer)
            var reader = ArchiveReader(sink: sink)
            do {
                let kind = try scanner.peekKind()
                if kind == .object {
                    try reader.readDocument(&scanner)
                } else {
                    try scanner.skipValue()
                }
                try scanner.finish()
                guard kind == .object else {
                    let got = JSONFieldValue.kindOnly(kind).kindDescription
                    return .failure(.malformed("the archive must be a JSON object like \(example), not \(got)"))
                }
            } catch {
                return .failure(.malformed("the archive is not valid JSON (\(error)); check quotes, commas and brackets"))
            }
            return reader.validatedDocument().map { ($0, reader.albumCount) }
        }()
        return try result.get()
    }
}

extension JSONFieldValue {
    /// A stand-in of the given kind, for naming it in messages.
    static func kindOnly(_ kind: JSONScanner.Kind) -> JSONFieldValue {
        switch kind {
        case .object: .object
        case .array: .array
        case .string: .string("")
        case .number: .number(JSONNumber(0))
        case .bool: .bool(false)
        case .null: .null
        }
    }
}

/// Reads an archive in one pass, then reports its problems in document-independent order.
///
/// Albums are validated as they are read (they are nearly all of the document); everything
/// else is kept as small field lists and checked at the end, because the top-level keys may
/// come in any order and states refer to album ids. Problems come out in the order the rules
/// list them — header, top-level fields, albums, states — whatever the order of the keys.
private struct ArchiveReader {
    /// Top-level members; `albums` and `states` are kept by kind only.
    private var topMembers: [JSONMember] = []
    /// More than `maximumMembersPerObject` top-level members were sent.
    private var tooManyTopMembers = false
    /// More than `maximumStates` states were sent.
    private var tooManyStates = false
    private var albums: [Album] = []
    /// Albums accepted in the current `albums` array (sent to the sink or kept in `albums`).
    private(set) var albumCount = 0
    /// Receives the albums in batches instead of `albums` keeping them.
    private let sink: ((ArchiveDocument.AlbumEvent) -> Void)?
    private var albumProblems: [ArchiveProblem] = []
    /// Where each accepted id first appeared (duplicates, and the states' `albumID`).
    private var firstIndexOfID = AlbumIDIndex()

    /// The 128 bits an album id's Crockford base32 text spells; they order as the texts do.
    fileprivate struct IDBits: Hashable, Comparable {
        var high: UInt64 = 0
        var low: UInt64 = 0

        init(_ id: AlbumID) {
            var text = id.rawValue
            text.withUTF8 { bytes in
                for byte in bytes {
                    let value = UInt64(CrockfordBase32.value(of: byte) ?? 0)
                    high = high << 5 | low >> 59
                    low = low << 5 | value
                }
            }
        }

        static func < (a: IDBits, b: IDBits) -> Bool {
            a.high != b.high ? a.high < b.high : a.low < b.low
        }
    }

    /// The ids of the albums read so far and the index each first appeared at, keyed by the
    /// id's 128 bits rather than its 26-character text.
    ///
    /// While every id is greater than the one before (an archive exported in creation order,
    /// the usual case: ids are ULIDs) they are kept in an array in that order: an id greater
    /// than the last cannot be a duplicate, so adding one costs no hashing, and a lookup is a
    /// binary search (24 bytes an id, ~24 MB for a million, against ~35 MB in a dictionary).
    /// The first id out of order moves them all into a dictionary, which serves from then on.
    fileprivate struct AlbumIDIndex {
        private var ascending: [(id: IDBits, index: Int)] = []
        private var hashed: [IDBits: Int]?

        init(reserving capacity: Int = 0) {
            ascending.reserveCapacity(capacity)
        }

        /// Where `id` first appeared; nil when it was not added.
        func firstIndex(of id: IDBits) -> Int? {
            if let hashed { return hashed[id] }
            var low = 0
            var high = ascending.count
            while low < high {
                let middle = (low + high) / 2
                if ascending[middle].id < id { low = middle + 1 } else { high = middle }
            }
            return low < ascending.count && ascending[low].id == id ? ascending[low].index : nil
        }

        /// Adds `id`, first seen at `index`; returns the index it first appeared at when it
        /// was added before (and then adds nothing).
        mutating func add(_ id: IDBits, at index: Int) -> Int? {
            if hashed == nil {
                if ascending.last.map({ $0.id < id }) ?? true {
                    ascending.append((id, index))
                    return nil
                }
                if let first = firstIndex(of: id) { return first }
                var dictionary = [IDBits: Int](minimumCapacity: ascending.count * 2)
                for entry in ascending { dictionary[entry.id] = entry.index }
                ascending = []
                hashed = dictionary
            }
            if let first = hashed?[id] { return first }
            hashed?[id] = index
            return nil
        }
    }
    /// The `states` items: an object's members, or the value that is not an object.
    private var stateItems: [StateItem] = []

    private enum StateItem {
        case object([JSONMember])
        case other(JSONFieldValue)
        case tooManyMembers
    }

    private var albumProblemsFull: Bool { albumProblems.count >= ArchiveDocument.maximumReportedProblems }

    init(sink: ((ArchiveDocument.AlbumEvent) -> Void)?) {
        self.sink = sink
    }

    /// Hands the albums read so far to the sink, unless a problem means they will not be imported.
    private mutating func flushAlbums(read: Int) {
        guard let sink, !albums.isEmpty else { return }
        if albumProblems.isEmpty { sink(.batch(albums, read: read)) }
        albums.removeAll(keepingCapacity: true)
    }

    mutating func readDocument(_ scanner: inout JSONScanner) throws(JSONSyntaxError) {
        try scanner.beginObject()
        while let key = try scanner.nextKey() {
            guard topMembers.count < ArchiveDocument.maximumMembersPerObject else {
                tooManyTopMembers = true
                try scanner.skipValue()
                continue
            }
            var value: JSONFieldValue = .array
            // A repeated key replaces the earlier value: the last value of a key counts.
            switch key {
            case "albums":
                if albumCount > 0 { sink?(.reset) }
                albums = []
                albumCount = 0
                albumProblems = []
                firstIndexOfID = AlbumIDIndex()
                if try scanner.peekKind() == .array { try readAlbums(&scanner) } else { value = try scanner.readValue() }
            case "states":
                stateItems = []
                tooManyStates = false
                if try scanner.peekKind() == .array { try readStates(&scanner) } else { value = try scanner.readValue() }
            default:
                value = try scanner.readValue()
            }
            topMembers.append(JSONMember(key: key, value: value))
        }
    }

    /// Reads the `albums` array, validating each album as it comes.
    private mutating func readAlbums(_ scanner: inout JSONScanner) throws(JSONSyntaxError) {
        // An exported album takes about 250 bytes; reserving avoids regrowing a huge array.
        let estimate = scanner.bytes.count / 256
        albums.reserveCapacity(sink == nil ? estimate : ArchiveDocument.albumBatchSize)
        firstIndexOfID = AlbumIDIndex(reserving: estimate)
        defer { flushAlbums(read: scanner.position) }
        try scanner.beginArray()
        var index = 0
        while try scanner.nextElement() {
            defer { index += 1 }
            // Past the problem limit nothing more is reported, but the syntax is still checked.
            if albumProblemsFull {
                try scanner.skipValue()
                continue
            }
            let kind = try scanner.peekKind()
            guard kind == .object else {
                try scanner.skipValue()
                addAlbumProblem("albums[\(index)]", "must be an object (got \(JSONFieldValue.kindOnly(kind).kindDescription))", index: index)
                continue
            }
            guard let members = try Self.readMembers(&scanner, reserving: ArchiveDocument.albumKeys.count) else {
                addAlbumProblem("albums[\(index)]", "has more than \(ArchiveDocument.maximumMembersPerObject) fields; an album has "
                                + ArchiveDocument.albumKeys.joined(separator: ", "), index: index)
                continue
            }
            guard let album = album(members, index: index) else { continue }
            if let first = firstIndexOfID.add(IDBits(album.id), at: index) {
                addAlbumProblem("albums[\(index)].id", "duplicates albums[\(first)].id (\(album.id)); every album needs its own id",
                                index: index, field: "id")
                continue
            }
            albums.append(album)
            albumCount += 1
            if sink != nil, albums.count >= ArchiveDocument.albumBatchSize { flushAlbums(read: scanner.position) }
        }
    }

    private mutating func addAlbumProblem(_ path: String, _ message: String, index: Int, field: String? = nil) {
        albumProblems.append(ArchiveProblem(path: path, albumIndex: index, field: field, message: path + " " + message))
    }

    private mutating func album(_ members: [JSONMember], index: Int) -> Album? {
        var reader = JSONFieldReader(members: members, array: "albums", index: index)
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
        let createdAt = ArchiveRules.requiredTimestamp("createdAt", &reader)
        let updatedAt = ArchiveRules.requiredTimestamp("updatedAt", &reader)
        for error in reader.errors where !albumProblemsFull {
            albumProblems.append(ArchiveProblem(
                path: error.field, albumIndex: index, field: String(error.field.dropFirst(reader.path.count)),
                message: error.message))
        }
        guard reader.errors.isEmpty, let id, let input, let createdAt, let updatedAt else { return nil }
        var album = Album(id: id, input: input, createdAt: createdAt)
        album.updatedAt = updatedAt
        return album
    }

    /// The members of the object the scanner is at, or nil (the object skipped) when it has
    /// more than `maximumMembersPerObject`.
    private static func readMembers(_ scanner: inout JSONScanner, reserving capacity: Int) throws(JSONSyntaxError) -> [JSONMember]? {
        var members: [JSONMember] = []
        members.reserveCapacity(capacity)
        try scanner.beginObject()
        while let key = try scanner.nextKey() {
            guard members.count < ArchiveDocument.maximumMembersPerObject else {
                try scanner.skipValue()
                while try scanner.nextKey() != nil { try scanner.skipValue() }
                return nil
            }
            members.append(JSONMember(key: key, value: try scanner.readValue()))
        }
        return members
    }

    /// Keeps the `states` items (at most `maximumStates`, shapes only for non-objects) for
    /// checking once every album id is known.
    private mutating func readStates(_ scanner: inout JSONScanner) throws(JSONSyntaxError) {
        try scanner.beginArray()
        while try scanner.nextElement() {
            guard stateItems.count < ArchiveDocument.maximumStates else {
                tooManyStates = true
                try scanner.skipValue()
                continue
            }
            let kind = try scanner.peekKind()
            guard kind == .object else {
                try scanner.skipValue()
                stateItems.append(.other(.kindOnly(kind)))
                continue
            }
            if let members = try Self.readMembers(&scanner, reserving: ArchiveDocument.stateKeys.count) {
                stateItems.append(.object(members))
            } else {
                stateItems.append(.tooManyMembers)
            }
        }
    }

    /// Checks everything read and returns the document, or every problem (up to the limit).
    func validatedDocument() -> Result<ArchiveDocument, LibraryError> {
        var problems = ArchiveProblems()
        var top = JSONFieldReader(members: topMembers)
        guard ArchiveRules.header(&top) else {
            problems.add(top, album: nil)
            return .failure(.archiveInvalid(problems.list))
        }
        top.rejectUnknownKeys(known: ArchiveDocument.topLevelKeys)
        var exportedAt: Date?
        if case .value(let value) = top.field("exportedAt") {
            exportedAt = ArchiveRules.timestamp("exportedAt", value, &top)
        }
        var library: String?
        if case .value(let value) = top.field("library") {
            library = top.string("library", value, hint: "a string")
        }
        var version: Int64?
        if case .value(let value) = top.field("version") {
            if let number = top.integer("version", value, in: IntegerRules.documentVersions) {
                version = Int64(number)
            }
        }
        problems.add(top, album: nil)
        if tooManyTopMembers {
            problems.add("archive", "has more than \(ArchiveDocument.maximumMembersPerObject) top-level fields; it has "
                         + ArchiveDocument.topLevelKeys.joined(separator: ", "))
        }
        let albumsValue = top.value("albums")
        if albumsValue == .array {
            for problem in albumProblems { problems.add(problem) }
        } else {
            problems.add("albums", "must be an array of albums (got \(albumsValue?.kindDescription ?? "nothing"))", field: "albums")
        }
        let states = self.states(top.value("states"), &problems)
        guard problems.list.isEmpty else { return .failure(.archiveInvalid(problems.list)) }
        return .success(ArchiveDocument(
            formatVersion: ArchiveDocument.currentFormatVersion, exportedAt: exportedAt, library: library,
            version: version, albums: albums, states: states))
    }

    /// Checks the states; an `albumID` must name an album accepted above (`firstIndexOfID`:
    /// while problems are not full, every album of the document was read).
    private func states(_ value: JSONFieldValue?, _ problems: inout ArchiveProblems) -> [SavedState] {
        guard let value, value != .null else { return [] }
        guard value == .array else {
            problems.add("states", "must be an array of saved states (got \(value.kindDescription))", field: "states")
            return []
        }
        guard !tooManyStates else {
            problems.add("states", "has more than \(ArchiveDocument.maximumStates) saved states; an archive keeps at most "
                         + "\(ArchiveDocument.maximumStates) (one per client)", field: "states")
            return []
        }
        var states: [SavedState] = []
        var seenClients: Set<String> = []
        for (index, item) in stateItems.enumerated() {
            if problems.full { break }
            let path = "states[\(index)]"
            let members: [JSONMember]
            switch item {
            case .object(let list): members = list
            case .other(let value):
                problems.add(path, "must be an object (got \(value.kindDescription))")
                continue
            case .tooManyMembers:
                problems.add(path, "has more than \(ArchiveDocument.maximumMembersPerObject) fields; a state has "
                             + ArchiveDocument.stateKeys.joined(separator: ", "))
                continue
            }
            var reader = JSONFieldReader(members: members, path: path + ".")
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
            if case .value(let value) = reader.field("currentAlbumIndex") {
                currentIndex = reader.integer("currentAlbumIndex", value, in: IntegerRules.positions)
            } else {
                reader.fail("currentAlbumIndex", "is required: " + IntegerRules.wholeNumber(IntegerRules.positions))
            }
            var albumID: AlbumID?
            if case .value(let value) = reader.field("albumID") {
                if let text = value.string, let id = AlbumID(text), firstIndexOfID.firstIndex(of: IDBits(id)) != nil {
                    albumID = id
                } else {
                    reader.fail("albumID", "must be null or the id of an album in this archive")
                }
            }
            var updatedAt: Date?
            if case .value(let value) = reader.field("updatedAt") {
                updatedAt = ArchiveRules.timestamp("updatedAt", value, &reader)
            }
            problems.add(reader, album: nil)
            if reader.errors.isEmpty, let client, let currentIndex {
                states.append(SavedState(client: client, currentAlbumIndex: currentIndex, albumID: albumID, updatedAt: updatedAt))
            }
        }
        return states
    }
}

/// Located problems, up to `ArchiveDocument.maximumReportedProblems`.
private struct ArchiveProblems {
    private(set) var list: [ArchiveProblem] = []

    var full: Bool { list.count >= ArchiveDocument.maximumReportedProblems }

    mutating func add(_ problem: ArchiveProblem) {
        guard !full else { return }
        list.append(problem)
    }

    mutating func add(_ path: String, _ message: String, album: Int? = nil, field: String? = nil) {
        add(ArchiveProblem(path: path, albumIndex: album, field: field, message: path + " " + message))
    }

    /// Copies the field errors of one reader into located problems.
    mutating func add(_ reader: JSONFieldReader, album: Int?) {
        for error in reader.errors {
            add(ArchiveProblem(
                path: error.field, albumIndex: album, field: String(error.field.dropFirst(reader.path.count)),
                message: error.message))
        }
    }
}

/// The archive's own field rules (album fields use `AlbumInput`'s).
private enum ArchiveRules {
    /// Checks `format` and `formatVersion`; false when the rest must not be read.
    static func header(_ top: inout JSONFieldReader) -> Bool {
        guard case .value(let format) = top.field("format"), format.string == ArchiveDocument.formatName else {
            let got = top.value("format")?.kindDescription ?? "nothing"
            top.fail("format", "must be \"\(ArchiveDocument.formatName)\" (got \(got)); is this a BlueLibrary archive?")
            return false
        }
        guard case .value(let versionValue) = top.field("formatVersion"), let formatVersion = versionValue.integer else {
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

    static func requiredTimestamp(_ key: String, _ reader: inout JSONFieldReader) -> Date? {
        guard case .value(let value) = reader.field(key) else {
            reader.fail(key, "is required: an RFC 3339 timestamp like \"2024-05-01T12:00:00.000Z\"")
            return nil
        }
        return timestamp(key, value, &reader)
    }

    static func timestamp(_ key: String, _ value: JSONFieldValue, _ reader: inout JSONFieldReader) -> Date? {
        guard let text = value.string, let date = Timestamp.parse(text) else {
            reader.fail(key, "must be an RFC 3339 timestamp like \"2024-05-01T12:00:00.000Z\" (got \(value.kindDescription))")
            return nil
        }
        return date
    }
}
