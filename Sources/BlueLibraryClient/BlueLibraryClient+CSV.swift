#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation

/// What `POST /albums/import` answers: how many albums the file added, the library's version
/// after, the file's columns that set no field, and the first new album's index (nil when the
/// file had no rows).
public struct CSVImportResultResource: Codable, Sendable, Equatable {
    public var imported: Int
    public var version: Int64
    public var ignoredColumns: [String]
    public var firstIndex: Int?
}

/// CSV in and out (`GET /albums?format=csv`, `POST /albums/import`), blocking. The client's
/// `timeout` applies to each call as a whole: a large library's export or import may need a
/// longer one than a page does.
extension BlueLibraryClient {
    /// The whole list of `source` as CSV bytes (header row first; see the server's docs for
    /// the columns), filtered and sorted as `query` says (its `limit` and `cursor` are not sent).
    public func exportCSV(
        _ query: AlbumPageQuery = AlbumPageQuery(), from source: AlbumListSource = .defaultLibrary
    ) throws(BlueLibraryClientError) -> Data {
        var filters = query
        filters.limit = nil
        filters.cursor = nil
        filters.offset = nil
        filters.count = false
        let items = [(name: "format", value: "csv")] + filters.queryItems
        let call = Call(request: try request("GET", source.pathPrefix + ["albums"], query: items)) { answer throws(BlueLibraryClientError) in
            guard answer.status < 400 else { throw Self.failure(answer) }
            guard answer.status == 200 else { throw .decoding(status: answer.status, message: "expected 200 with a CSV body") }
            return answer.body
        }
        return try wait(call)
    }

    /// Adds the albums of the CSV file `csv` to `source`'s library in one step (at the end, or
    /// from `index` on); all or nothing: a bad row fails the call with the server's problem,
    /// which names each bad line and column.
    public func importCSV(
        _ csv: Data, into source: AlbumListSource = .defaultLibrary, at index: Int? = nil, idempotencyKey: String? = nil
    ) throws(BlueLibraryClientError) -> CSVImportResultResource {
        var request = try request(
            "POST", source.pathPrefix + ["albums", "import"], query: index.map { [("index", String($0))] } ?? [],
            headers: idempotencyKey.map { ["Idempotency-Key": $0] } ?? [:])
        request.httpBody = csv
        request.setValue("text/csv; charset=utf-8", forHTTPHeaderField: "Content-Type")
        return try wait(Call(request: request) { answer throws(BlueLibraryClientError) in try Self.decode(answer) })
    }
}
