import SQLite

extension SQLiteAlbumStore {
    /// Reads that waited for a free reader connection, and those that timed out waiting.
    public var readerPoolStatistics: (waits: Int, timeouts: Int) { database.readerPoolStatistics }

    /// Write transactions committed by the writer and the write calls they carried (group
    /// commit: several queued writes share one transaction), and the WAL pages written.
    public var groupCommitStatistics: GroupCommitStatistics { database.groupCommitStatistics }

    /// Bytes the writer appended to the write-ahead log so far (frames of one page plus a
    /// 24-byte header each).
    public var walBytesWritten: Int { database.groupCommitStatistics.walFramesWritten * (database.pageSize + 24) }

    /// Writes waiting for the writer right now (tests observe a batch forming).
    public var queuedWriteCount: Int { database.queuedWriteCount }
}
