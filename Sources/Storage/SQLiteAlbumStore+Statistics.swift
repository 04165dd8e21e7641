extension SQLiteAlbumStore {
    /// Reads that waited for a free reader connection, and those that timed out waiting.
    public var readerPoolStatistics: (waits: Int, timeouts: Int) { database.readerPoolStatistics }
}
