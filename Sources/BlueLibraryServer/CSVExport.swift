import BlueLibraryAPI
import Essentials
import HTTPServer
import Library

/// A list as one CSV download (`GET /albums` with `?format=csv` or `Accept: text/csv`; see
/// ``CSVNegotiation``): the header row, then every album the query lists, in its order.
///
/// Rules:
/// - The whole list, not a page: `limit`, `cursor` and `offset` are refused (400 naming the
///   parameter); the filters and `sort` apply as on a JSON page.
/// - Streamed with bounded memory: the list is walked a page at a time in one read snapshot
///   (`LibraryFacade.walkList`), rows are written into chunks of about `chunkBytes`, and a
///   chunk waits while `ArchiveRoutes.exportWindow` bytes are queued for the client. The walk
///   runs on an export thread (the archive export's, sharing its slots, queue deadline and
///   minimum client rate, `ExportPolicy`), never on the event loop or a request worker.
/// - `index`: the album's index in the listing's own position order when the page would carry
///   one (a library or view listed unfiltered in position order: its index there), otherwise
///   its 0-based row number in this export (a filtered or sorted list).
/// - Cells: see `AlbumCSV` and `CSVWriter` (RFC 4180, CRLF; a text cell starting with `=`,
///   `+`, `-`, `@`, tab or CR gets a `'` prefix against formula injection).
/// - A HEAD gets the headers only; the walk does not start.
struct CSVExport: Sendable {
    let workers: ArchiveWorkers
    let policy: ExportPolicy

    /// Bytes collected before a chunk is handed to the connection.
    static let chunkBytes = 64 * 1024

    /// The walk of a list: calls its argument with each page's items, in order.
    typealias Walk = @Sendable (_ page: ([ListedAlbum]) throws -> Void) throws -> Void

    /// The response for `request`, named `<name>.csv`. Takes an export slot (503 when none
    /// comes free in time, as the archive export).
    func response(_ request: HTTPRequest, name: String, walk: @escaping Walk) throws -> HTTPResponse {
        let headers: HTTPHeaders = [
            "Content-Type": "text/csv; charset=utf-8",
            "Content-Disposition": "attachment; filename=\"\(Self.fileName(name))\"",
            "Cache-Control": "no-store",
        ]
        if request.method == .head { return HTTPResponse(headers: headers, body: .unknownLength) }
        let lease = try workers.exportLease(policy)
        let body = HTTPStreamBody(endsOnShutdown: false) { [workers, policy] writer in
            workers.run {
                defer { lease.release() }
                let started = ContinuousClock.now
                var produced = 0
                var buffer: [UInt8] = []
                buffer.reserveCapacity(Self.chunkBytes + 4096)
                let send = { (buffer: inout [UInt8]) throws in
                    guard writer.waitForCapacity(below: ArchiveRoutes.exportWindow, until: policy.deadline(started, produced)),
                          writer.write(buffer)
                    else { throw ArchiveRoutes.ExportAborted() }
                    produced += buffer.count
                    buffer.removeAll(keepingCapacity: true)
                }
                do {
                    AlbumCSV.appendHeader(to: &buffer)
                    var row = 0
                    try walk { items in
                        for item in items {
                            Self.appendRow(item, row: row, to: &buffer)
                            row += 1
                            if buffer.count >= Self.chunkBytes { try send(&buffer) }
                        }
                    }
                    if !buffer.isEmpty { try send(&buffer) }
                    writer.finish()
                } catch {
                    // The client is gone or too slow, or the read failed after the head went
                    // out: a cut connection, so a truncated file is never taken for whole.
                    writer.abort()
                }
            }
        }
        return HTTPResponse(headers: headers, body: .stream(body))
    }

    static func appendRow(_ item: ListedAlbum, row: Int, to buffer: inout [UInt8]) {
        let album = item.album
        AlbumCSV.appendRow(
            id: album.id.rawValue, index: item.index ?? row, title: album.title, artist: album.artist, genre: album.genre,
            year: album.year, coverUrl: album.coverUrl,
            createdAtMilliseconds: Timestamp.milliseconds(album.createdAt), updatedAtMilliseconds: Timestamp.milliseconds(album.updatedAt),
            to: &buffer)
    }

    /// A library or view name as a file name: its own characters are letters, digits, `-` and
    /// `_`; anything else (never in a valid name) becomes `_`, so the header stays well formed.
    static func fileName(_ name: String) -> String {
        let safe = name.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_")
                ? Character(scalar) : "_"
        }
        return String(safe.isEmpty ? ["_"] : safe) + ".csv"
    }
}
