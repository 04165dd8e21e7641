/// One reason an archive document cannot be imported, located precisely.
///
/// `path` is where in the document the problem is (`albums[3].year`, `formatVersion`,
/// `states[0].client`); `albumIndex` and `field` repeat it in parts for albums.
public struct ArchiveProblem: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var path: String
    /// The position in `albums` of the album at fault, if the problem is in an album.
    public var albumIndex: Int?
    /// The field inside that album (or at the top level) at fault, if any.
    public var field: String?
    /// A full sentence starting with `path`.
    public var message: String

    public init(path: String, albumIndex: Int? = nil, field: String? = nil, message: String) {
        self.path = path
        self.albumIndex = albumIndex
        self.field = field
        self.message = message
    }

    public var description: String { message }
}
