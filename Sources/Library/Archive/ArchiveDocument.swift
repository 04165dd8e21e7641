import Foundation

/// A whole library as one versioned document (the tutorial's `NSKeyedArchiver` file, as JSON):
///
/// ```json
/// {"format": "bluelibrary.archive", "formatVersion": 1, "exportedAt": "2024-05-01T12:00:00.000Z",
///  "library": "default", "version": 42, "albums": [...in order...], "states": [...]}
/// ```
///
/// Rules: `format` names the kind of document so a stray JSON file is refused rather than
/// imported; `formatVersion` changes whenever the shape changes, and a reader refuses versions
/// it does not know instead of guessing. Albums keep their ids and timestamps across an
/// export/import round trip.
public struct ArchiveDocument: Sendable, Equatable {
    public static let formatName = "bluelibrary.archive"
    /// The only format version this code reads and writes.
    public static let currentFormatVersion = 1

    public var formatVersion: Int
    public var exportedAt: Date?
    /// The library it was exported from (informational; import may target another).
    public var library: String?
    /// The version the library had at export (informational; import always bumps the target's
    /// own version so ETags never go backwards).
    public var version: Int64?
    public var albums: [Album]
    public var states: [SavedState]

    public init(
        formatVersion: Int = ArchiveDocument.currentFormatVersion, exportedAt: Date?, library: String?,
        version: Int64?, albums: [Album], states: [SavedState]
    ) {
        self.formatVersion = formatVersion
        self.exportedAt = exportedAt
        self.library = library
        self.version = version
        self.albums = albums
        self.states = states
    }
}

/// What an import did.
public struct ArchiveImportSummary: Sendable, Equatable {
    public var albumCount: Int
    public var stateCount: Int
    /// The library version after the import.
    public var version: Int64

    public init(albumCount: Int, stateCount: Int, version: Int64) {
        self.albumCount = albumCount
        self.stateCount = stateCount
        self.version = version
    }
}

/// What an export wrote.
public struct ArchiveExportSummary: Sendable, Equatable {
    public var albumCount: Int
    /// The library version the export is a snapshot of.
    public var version: Int64
    public var byteCount: Int

    public init(albumCount: Int, version: Int64, byteCount: Int) {
        self.albumCount = albumCount
        self.version = version
        self.byteCount = byteCount
    }
}
