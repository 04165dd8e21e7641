/// What `GET /undo` shows: like the tutorial's Undo button, enabled while the stack is not empty.
public struct UndoStatus: Sendable, Equatable, Codable {
    /// Commands on the stack (at most the facade's `undoLimit`).
    public var depth: Int
    /// What the next undo would do, or `nil` when there is nothing to undo.
    public var next: String?

    public var canUndo: Bool { depth > 0 }

    public init(depth: Int, next: String?) {
        self.depth = depth
        self.next = next
    }
}

/// The result of one undo: which command was applied and where its album is now.
public struct UndoResult: Sendable, Equatable {
    /// The command that was popped and applied.
    public var command: UndoCommand
    /// The album after the undo and its index; `nil` when the undo removed it.
    public var album: IndexedAlbum?
    /// The library version after the undo.
    public var version: Int64

    public init(command: UndoCommand, album: IndexedAlbum?, version: Int64) {
        self.command = command
        self.album = album
        self.version = version
    }
}
