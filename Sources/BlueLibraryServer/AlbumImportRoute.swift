import BlueLibraryAPI
import Essentials
import HTTPServer
import Library

/// `POST /albums/import` (and `/libraries/{lib}/albums/import`): albums from a CSV file
/// (`Content-Type: text/csv`), added to the library all at once.
///
/// Rules:
/// - The file is read by `AlbumCSV.importAlbums` (header names matched without regard to case,
///   in any order; a UTF-8 BOM, CRLF/LF/CR line ends and quoted line breaks are taken; Discogs
///   collection exports are read as they are). A file with any bad row is refused whole: 422
///   whose `errors` name each problem as `line N, column "Name"` (or `line N` for a problem of
///   the row or the file), up to `AlbumCSV.maximumImportErrors`, and nothing is applied.
/// - All rows are added in **one** atomic batch (`LibraryFacade.apply`): one transaction, one
///   version and event per album, one undo step that takes the whole import back. They go to
///   the end of the list, or from `?index=N` on (row k at N + k); an index past the end is 422
///   naming `index`.
/// - Limits: the body at most ``maxBodyBytes`` (413 from the server before the route runs),
///   at most ``maxRows`` data rows (413 naming the count), ``maximumConcurrentImports`` at once
///   (503 with `Retry-After`), and the batch may hold the writer for ``writeBudget`` (then it
///   is rolled back: 503 `write-timed-out`).
/// - `Idempotency-Key` is honoured as by `POST /albums`.
/// - Answer: 201 `{"imported": n, "version": v, "ignoredColumns": […], "firstIndex": i}`
///   (`firstIndex` is the first new album's index, null when the file had no rows: then the
///   answer is 200 and nothing changed). Covers are not prefetched (a large import would start
///   thousands of fetches); each loads when first asked for.
struct AlbumImportRoute {
    let libraries: LibraryResolver
    let idempotency: IdempotencyGuard

    /// The largest CSV body: a Discogs export of 100,000 releases is about 15 MB.
    static let maxBodyBytes = 32 << 20
    /// The most albums one import adds.
    static let maxRows = 100_000
    /// How long the import's batch may hold the library's writer. Measured on SQLite in a
    /// release build: 100,000 rows take 7.4 s into a library of 40,000 albums and 15.9 s beside
    /// 1,000,000 (the search index's merges grow with it); 60 s lets such imports through on a
    /// slower disk while still bounding how long one import holds every other writer.
    static let writeBudget = Duration.seconds(60)
    /// Imports parsed at once (each holds its body and its albums in memory).
    static let maximumConcurrentImports = 2
    let running = ImportSlots()

    func register(into routes: inout RouterBuilder) {
        routes.addForEachLibrary(
            .post, "/albums/import", options: RouteOptions(execution: .workerPool, maxBodyBytes: Self.maxBodyBytes), importCSV)
    }

    func importCSV(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let index = try QueryParameters(request).index("index")
        try Self.requireCSV(request)
        let facade = try libraries.facade(context)
        guard running.take(limit: Self.maximumConcurrentImports) else {
            throw HTTPError(.serviceUnavailable, detail: "Two imports are running; retry when one is done.", headers: ["Retry-After": "5"])
        }
        defer { running.give() }
        return try idempotency.run(request, context: context) {
            try Self.checkRowCount(request.body)
            let file: AlbumCSVImport
            do throws(CSVImportFailure) {
                file = try AlbumCSV.importAlbums(from: request.body)
            } catch {
                throw Self.problem(error)
            }
            guard file.albums.count <= Self.maxRows else { throw Self.tooManyRows(file.albums.count) }
            let steps = file.albums.enumerated().map { row, album in BatchStep.add(album, index: index.map { $0 + row }) }
            switch try facade.apply(steps, atomic: true, budget: Self.writeBudget) {
            case let .rolledBack(_, error):
                if case .indexOutOfRange = error { throw error.inContext(field: "index") }
                throw error
            case let .committed(results, version):
                var firstIndex: Int?
                if case let .applied(item, _)? = results.first { firstIndex = item.index }
                return try Self.response(
                    imported: results.count, version: version, ignored: file.ignoredColumns, firstIndex: firstIndex, pretty: request.wantsPretty)
            }
        }
    }

    /// 415 unless the body is `text/csv` (parameters such as `charset=utf-8` are allowed; the
    /// bytes must be UTF-8 whatever they say); 400 for an empty body.
    static func requireCSV(_ request: HTTPRequest) throws {
        let type = RequestInput.mediaType(of: request)
        guard type == "text/csv" else {
            throw HTTPError(
                .unsupportedMediaType,
                detail: "Send the file as CSV with 'Content-Type: text/csv' (got \(type.map { "'\($0)'" } ?? "no Content-Type"));"
                    + " with curl use --data-binary @albums.csv -H 'Content-Type: text/csv'.",
                headers: ["Accept-Post": "text/csv"])
        }
        guard !request.body.isEmpty else {
            throw HTTPError(.badRequest, detail: "The request body is empty; send a CSV file whose first line names the columns.")
        }
    }

    /// 413 when the file has more than `maxRows` records, before any album is made: a line
    /// count bounds the records (a quoted line break only adds lines), and only a file past
    /// it is counted record by record.
    static func checkRowCount(_ body: [UInt8]) throws {
        var lines = 0
        for byte in body where byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") { lines += 1 }
        // Every record but the last ends in at least one line-end byte: a file with fewer of
        // them than the limit cannot hold more rows (the header is one record more).
        guard lines >= maxRows else { return }
        var reader = CSVReader(body)
        var records = 0
        // A syntax error ends the count here; the import then reports it. Blank records are
        // skipped by the import, so they are not counted.
        while records <= maxRows + 1, let record = try? reader.next() {
            if record.fields != [""] { records += 1 }
        }
        if records > maxRows + 1 { throw tooManyRows(records - 1) }
    }

    static func tooManyRows(_ count: Int) -> HTTPError {
        HTTPError(
            .contentTooLarge,
            detail: "The file has \(count > maxRows ? "more than \(maxRows)" : String(count)) rows;"
                + " an import adds at most \(maxRows) albums. Split the file and import the parts one by one.",
            type: "urn:bluelibrary:problem:import-too-large", title: "Import too large")
    }

    /// The 422 of a refused file: one entry per problem, `field` naming where it is.
    static func problem(_ failure: CSVImportFailure) -> HTTPError {
        let errors = failure.errors.map { error in
            let place = error.column.map { "line \(error.line), column \"\($0)\"" } ?? "line \(error.line)"
            return HTTPError.FieldError(field: place, message: "\(place): \(error.message)")
        }
        let count = failure.hasMoreErrors ? "more than \(failure.errors.count) problems (the first \(failure.errors.count) are listed)"
            : failure.errors.count == 1 ? "a problem" : "\(failure.errors.count) problems"
        return HTTPError(
            .unprocessableContent,
            detail: "The CSV file has \(count); nothing was imported. Fix the file and send it again.",
            type: "urn:bluelibrary:problem:invalid-csv", title: "Invalid CSV file", errors: errors)
    }

    static func response(imported: Int, version: Int64, ignored: [String], firstIndex: Int?, pretty: Bool) throws -> HTTPResponse {
        var json = JSONWriter(capacity: 128)
        json.beginObject()
        json.key("imported"); json.number(imported)
        json.key("version"); json.number(version)
        json.key("ignoredColumns")
        json.beginArray()
        for name in ignored { json.string(name) }
        json.endArray()
        json.key("firstIndex")
        if let firstIndex { json.number(firstIndex) } else { json.null() }
        json.endObject()
        json.newline()
        let body = pretty ? JSONIndenter.indent(json.bytes) : json.bytes
        return HTTPResponse(status: imported > 0 ? .created : .ok, contentType: "application/json", bytes: body)
    }
}
