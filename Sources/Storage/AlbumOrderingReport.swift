import Library

/// A summary of one library's ordering structure, from a consistency check of either store.
public struct AlbumOrderingReport: Sendable, Equatable {
    public var albumCount: Int
    public var bucketCount: Int
    public var largestBucket: Int
    public var smallestBucket: Int

    public init(albumCount: Int, bucketCount: Int, largestBucket: Int, smallestBucket: Int) {
        self.albumCount = albumCount
        self.bucketCount = bucketCount
        self.largestBucket = largestBucket
        self.smallestBucket = smallestBucket
    }

    /// Checks the ordering bookkeeping of `library` against the album rows (every bucket's
    /// size, the library's count, no empty bucket, no album of another library in a bucket,
    /// no shared position) in the transaction on `db`, and returns a summary (empty for an
    /// unknown library). Scans the whole library: for tests and maintenance.
    /// - Throws: `StorageError.corrupt` describing the first broken invariant.
    static func check<DB: SQLSession>(_ library: LibraryID, _ db: DB) throws -> AlbumOrderingReport {
        guard let row = try db.value(SQL.libraryID, [.text(library.rawValue)], as: Int64.self) else {
            return AlbumOrderingReport(albumCount: 0, bucketCount: 0, largestBucket: 0, smallestBucket: 0)
        }
        var report = AlbumOrderingReport(albumCount: 0, bucketCount: 0, largestBucket: 0, smallestBucket: Int.max)
        var problems: [String] = []
        try db.forEachRow(SQL.bucketsWithActualSizes, [.integer(row)]) { bucket in
            let (id, size, actual, foreign) = (try bucket.int64(1), try bucket.int(2), try bucket.int(3), try bucket.int(4))
            if size != actual { problems.append("bucket \(id) records \(size) albums but holds \(actual)") }
            if size == 0 { problems.append("bucket \(id) is empty") }
            if foreign != 0 { problems.append("bucket \(id) holds \(foreign) albums of another library") }
            report.bucketCount += 1
            report.albumCount += actual
            report.largestBucket = max(report.largestBucket, actual)
            report.smallestBucket = min(report.smallestBucket, actual)
        }
        if report.bucketCount == 0 { report.smallestBucket = 0 }
        let recorded = try db.value(SQL.albumCount, [.integer(row)], as: Int.self) ?? 0
        let rows = try db.value(SQL.albumsOfLibrary, [.integer(row)], as: Int.self) ?? 0
        if recorded != rows { problems.append("library records \(recorded) albums but holds \(rows)") }
        if report.albumCount != rows { problems.append("buckets hold \(report.albumCount) of \(rows) albums") }
        if try db.value(SQL.duplicatePositions, [.integer(row)], as: Int.self) != 0 {
            problems.append("two albums share a position")
        }
        if let first = problems.first {
            throw StorageError(.corrupt, first)
        }
        return report
    }
}
