import BlueLibraryAPI
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation

/// One operation of `POST /batch`, as sent.
public struct BatchOperation: Encodable, Sendable, Hashable {
    /// How an operation names its album.
    public enum Target: Sendable, Hashable {
        case id(String)
        /// The album the earlier operation at this position of the batch added.
        case ref(Int)
        /// The album at this index (deletes only).
        case index(Int)
    }

    public enum Kind: String, Sendable, Hashable { case add, update, move, delete }

    public var kind: Kind
    public var target: Target?
    public var album: AlbumInput?
    public var patch: AlbumPatchInput?
    /// For an add, where to insert (nil appends); for a move, where to (with `library`, nil
    /// appends there).
    public var index: Int?
    public var ifMatch: String?
    /// For a move: the library to move the album to (nil: within the batch's library).
    public var library: String?

    public static func add(_ album: AlbumInput, at index: Int? = nil) -> BatchOperation {
        BatchOperation(kind: .add, album: album, index: index)
    }

    public static func update(_ target: Target, _ patch: AlbumPatchInput, ifMatch: String? = nil) -> BatchOperation {
        BatchOperation(kind: .update, target: target, patch: patch, ifMatch: ifMatch)
    }

    public static func move(_ target: Target, to index: Int) -> BatchOperation {
        BatchOperation(kind: .move, target: target, index: index)
    }

    /// A move to another library, at `index` there (nil appends), in the same transaction as
    /// the rest of the batch; one undo of the batch's library takes it back too. Naming the
    /// batch's own library is a move within it (nil: to the end).
    public static func move(_ target: Target, toLibrary library: String, at index: Int? = nil) -> BatchOperation {
        BatchOperation(kind: .move, target: target, index: index, library: library)
    }

    public static func delete(_ target: Target, ifMatch: String? = nil) -> BatchOperation {
        BatchOperation(kind: .delete, target: target, ifMatch: ifMatch)
    }

    enum CodingKeys: String, CodingKey { case op, id, ref, index, album, patch, ifMatch, library }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind.rawValue, forKey: .op)
        switch target {
        case let .id(id)?: try container.encode(id, forKey: .id)
        case let .ref(operation)?: try container.encode(operation, forKey: .ref)
        case let .index(index)?: try container.encode(index, forKey: .index)
        case nil: break
        }
        try container.encodeIfPresent(index, forKey: .index)
        try container.encodeIfPresent(album, forKey: .album)
        try container.encodeIfPresent(patch?.mergePatch, forKey: .patch)
        try container.encodeIfPresent(ifMatch, forKey: .ifMatch)
        try container.encodeIfPresent(library, forKey: .library)
    }
}

/// The answer of a committed batch: one result per operation, in order.
public struct BatchAnswer: Codable, Sendable, Hashable {
    public var atomic: Bool
    /// The library's version after the batch.
    public var version: Int64
    public var applied: Int
    public var refused: Int
    public var results: [BatchOperationResult]
    /// Each other library the batch moved albums to, with its version after the batch; nil
    /// when it moved none out.
    public var destinations: [String: Int64]?
}

/// One operation's result: the status and body its single request would have had.
public struct BatchOperationResult: Codable, Sendable, Hashable {
    public var operation: Int
    public var status: Int
    /// The version its change made; nil when it changed nothing (or was refused).
    public var version: Int64?
    /// A move to another library: that library's version its arrival made (the album's
    /// `library` names it).
    public var arrivalVersion: Int64?
    public var etag: String?
    public var album: AlbumResource?
    public var problem: Problem?

    public var isApplied: Bool { (200..<300).contains(status) }
}

extension BlueLibraryClient {
    /// `POST /batch`: applies `operations` in order in one transaction (one undo step takes
    /// them all back). Atomic: the first refused operation makes the call throw its problem
    /// (`errors` name `operations[k]`) and nothing is applied; not atomic: refused operations
    /// are reported in their results and the others apply. With an `idempotencyKey`, a retry
    /// of the same batch answers the first result and applies nothing.
    public func batch(_ operations: [BatchOperation], atomic: Bool = true, in library: String = AlbumListSource.defaultLibraryID,
                      idempotencyKey: String? = nil) async throws(BlueLibraryClientError) -> BatchAnswer {
        try await send(batchCall(operations, atomic: atomic, in: library, idempotencyKey: idempotencyKey))
    }

    /// `POST /batch` with operations written as JSON already (one object each, in the wire
    /// format; `bluelibrary albums apply` reads them from a file): the server checks them.
    public func batch(json operations: [Data], atomic: Bool = true, in library: String = AlbumListSource.defaultLibraryID,
                      idempotencyKey: String? = nil) async throws(BlueLibraryClientError) -> BatchAnswer {
        try await send(batchCall(json: operations, atomic: atomic, in: library, idempotencyKey: idempotencyKey))
    }

    func batchCall(_ operations: [BatchOperation], atomic: Bool, in library: String, idempotencyKey: String?)
        throws(BlueLibraryClientError) -> Call<BatchAnswer>
    {
        try call("POST", path(library, "batch"), json: BatchBody(atomic: atomic, operations: operations),
                 headers: idempotencyKey.map { ["Idempotency-Key": $0] } ?? [:])
    }

    func batchCall(json operations: [Data], atomic: Bool, in library: String, idempotencyKey: String?)
        throws(BlueLibraryClientError) -> Call<BatchAnswer>
    {
        var body = Data(#"{"atomic":\#(atomic),"operations":["#.utf8)
        for (number, operation) in operations.enumerated() {
            if number > 0 { body.append(UInt8(ascii: ",")) }
            body.append(operation)
        }
        body.append(contentsOf: Array("]}".utf8))
        var request = try request("POST", path(library, "batch"), headers: idempotencyKey.map { ["Idempotency-Key": $0] } ?? [:])
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        return Call(request: request, read: { answer throws(BlueLibraryClientError) in try Self.decode(answer) })
    }

    /// The most operations the server takes in one batch.
    public static let maxBatchOperations = BatchRequest.maxOperations
}

private struct BatchBody: Encodable {
    let atomic: Bool
    let operations: [BatchOperation]
}
