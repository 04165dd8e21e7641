import Library

@testable import BlueLibraryServer

extension LiveServer {
    /// A server whose change feed keeps only the last two changes (older `since` is 410).
    static func keepingTwoChanges() throws -> LiveServer {
        try LiveServer { $0.changeRetention = ChangeRetention(age: .zero, count: 2, prunePerWrite: 16) }
    }
}
