import BlueLibraryAPI
import Essentials

extension LibraryFacade {
    /// Streams the library as an `ArchiveDocument`: the header, then each album as the store
    /// iterates them, then each state as the store iterates them — in chunks of about `chunkSize` bytes, never the whole
    /// library at once. Everything comes from one read snapshot, so the document is consistent
    /// even while others write. The output ends with a newline.
    ///
    /// - Parameters:
    ///   - chunkSize: flush to `write` whenever this many bytes are buffered.
    ///   - write: receives each chunk in order; throwing stops the export.
    /// - Throws: `.outputFailed` when `write` throws, `.storage` when the store does.
    @discardableResult
    public func exportArchive(chunkSize: Int = 64 * 1024, write: ([UInt8]) throws -> Void)
        throws(LibraryError) -> ArchiveExportSummary
    {
        let exportedAt = now()
        return try reading { reader in try withoutActuallyEscaping(write) { write in
            var stream = ArchiveStreamWriter(chunkSize: chunkSize, output: write)
            let version = try reader.version()
            try stream.append { buffer in
                JSONBytes.appendRaw("{", to: &buffer)
                JSONBytes.appendKey("format", to: &buffer)
                JSONString.append(ArchiveDocument.formatName, to: &buffer)
                JSONBytes.appendRaw(",", to: &buffer)
                JSONBytes.appendKey("formatVersion", to: &buffer)
                JSONBytes.appendRaw(String(ArchiveDocument.currentFormatVersion) + ",", to: &buffer)
                JSONBytes.appendKey("exportedAt", to: &buffer)
                Timestamp.appendQuoted(exportedAt, to: &buffer)
                JSONBytes.appendRaw(",", to: &buffer)
                JSONBytes.appendKey("library", to: &buffer)
                JSONString.append(library.rawValue, to: &buffer)
                JSONBytes.appendRaw(",", to: &buffer)
                JSONBytes.appendKey("version", to: &buffer)
                JSONBytes.appendRaw(String(version) + ",", to: &buffer)
                JSONBytes.appendKey("albums", to: &buffer)
                JSONBytes.appendRaw("[", to: &buffer)
            }
            var albumCount = 0
            try reader.forEachAlbum { album in
                let separator = albumCount > 0
                try stream.append { buffer in
                    if separator { buffer.append(UInt8(ascii: ",")) }
                    buffer.append(UInt8(ascii: "\n"))
                    album.appendJSON(to: &buffer)
                }
                albumCount += 1
            }
            try stream.append { buffer in
                JSONBytes.appendRaw("\n],", to: &buffer)
                JSONBytes.appendKey("states", to: &buffer)
                JSONBytes.appendRaw("[", to: &buffer)
            }
            // States stream like albums: however many clients saved one, no buffer holds them all.
            var stateCount = 0
            try reader.forEachState { state in
                let separator = stateCount > 0
                try stream.append { buffer in
                    if separator { buffer.append(UInt8(ascii: ",")) }
                    Self.appendState(state, to: &buffer)
                }
                stateCount += 1
            }
            try stream.append { buffer in JSONBytes.appendRaw("]}\n", to: &buffer) }
            try stream.flush()
            return ArchiveExportSummary(albumCount: albumCount, version: version, byteCount: stream.byteCount)
        } }
    }

    /// Replaces the whole library with an archive, atomically.
    ///
    /// Rules: one transaction deletes every album and state, inserts the archive's albums in
    /// order (keeping their ids and timestamps) as the parser validates them, in batches, and
    /// its states, clears the undo stack (its commands refer to the old library) and bumps the
    /// version once. Any problem in the document (checked as completely as before: every
    /// problem up to the limit is reported) rolls the transaction back, so an invalid
    /// document changes nothing. The albums are never all in memory at once. The document's
    /// own `version` is not restored: versions only grow, or caches would serve stale pages
    /// as current.
    ///
    /// An album id that another library holds is refused with `.conflict` naming it (ids are
    /// unique across libraries); nothing is changed.
    ///
    /// - Throws: `.malformed`, `.archiveInvalid`, `.conflict` (nothing changed), `.storage`.
    @discardableResult
    public func importArchive(_ bytes: [UInt8]) throws(LibraryError) -> ArchiveImportSummary {
        try bytes.withUnsafeBufferPointer { buffer throws(LibraryError) in try importArchive(json: buffer) }
    }

    /// Like ``importArchive(_:)`` over a buffer the caller owns (a mapped file); `read` is
    /// told, now and then, how many leading bytes of `buffer` the parser is done with, so the
    /// caller can release them.
    @discardableResult
    public func importArchive(json buffer: UnsafeBufferPointer<UInt8>, read: (Int) -> Void = { _ in })
        throws(LibraryError) -> ArchiveImportSummary
    {
        try withoutActuallyEscaping(read) { read throws(LibraryError) in try importArchive(buffer, read: read) }
    }

    private func importArchive(_ buffer: UnsafeBufferPointer<UInt8>, read: @escaping (Int) -> Void)
        throws(LibraryError) -> ArchiveImportSummary
    {
        try mutating(alone: true) { writer in
            try writer.deleteAllAlbums()
            try writer.deleteAllStates()
            var inserted = 0
            var failure: (any Error)?
            let (document, albumCount) = try ArchiveDocument.parse(buffer) { event in
                guard failure == nil else { return }
                do {
                    switch event {
                    case .reset:
                        try writer.deleteAllAlbums()
                        inserted = 0
                    case let .batch(albums, bytesRead):
                        for album in albums {
                            try self.insertImported(album, at: inserted, writer)
                            inserted += 1
                        }
                        read(bytesRead)
                    }
                } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
            let savedAt = now()
            for var state in document.states {
                state.updatedAt = state.updatedAt ?? savedAt
                try writer.saveState(state)
            }
            try writer.clearUndo()
            let version = try finishMutation(writer, undo: nil)
            let summary = ArchiveImportSummary(albumCount: albumCount, stateCount: document.states.count, version: version)
            return (summary, [.libraryReplaced(version: version)])
        }
    }

    /// Inserts one album of an archive. Album ids are unique across libraries and the store
    /// refuses an id another library holds; only then is the holder looked up (one lookup per
    /// album would slow every import down), to say which library it is.
    private func insertImported(_ album: Album, at index: Int, _ writer: any AlbumStoreWriter) throws {
        do {
            try writer.insert(album, at: index)
        } catch {
            // This library's own albums are gone by now: any holder is another library.
            if let holder = try writer.library(of: album.id), holder != library {
                throw LibraryError.conflict(
                    "album \(album.id) of the archive is in library \"\(holder)\"; album ids are unique across libraries, "
                        + "so move or delete it there first (or remove it from the archive); nothing was changed")
            }
            throw error
        }
    }

    private static func appendState(_ state: SavedState, to buffer: inout [UInt8]) {
        JSONBytes.appendRaw("{", to: &buffer)
        JSONBytes.appendKey("client", to: &buffer)
        JSONString.append(state.client, to: &buffer)
        JSONBytes.appendRaw(",", to: &buffer)
        JSONBytes.appendKey("currentAlbumIndex", to: &buffer)
        JSONBytes.appendRaw(String(state.currentAlbumIndex) + ",", to: &buffer)
        JSONBytes.appendKey("albumID", to: &buffer)
        JSONString.append(state.albumID?.rawValue, to: &buffer)
        JSONBytes.appendRaw(",", to: &buffer)
        JSONBytes.appendKey("updatedAt", to: &buffer)
        JSONString.append(state.updatedAt.map(Timestamp.format), to: &buffer)
        JSONBytes.appendRaw("}", to: &buffer)
    }
}
