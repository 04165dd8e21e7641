/// Buffers export bytes and hands them to the output in chunks of about `chunkSize`.
///
/// Rule: memory stays bounded by one chunk plus one album, whatever the library's size —
/// the export never builds the whole document.
struct ArchiveStreamWriter {
    private var buffer: [UInt8] = []
    private let chunkSize: Int
    private let output: ([UInt8]) throws -> Void
    private(set) var byteCount = 0

    init(chunkSize: Int, output: @escaping ([UInt8]) throws -> Void) {
        self.chunkSize = max(chunkSize, 1)
        self.output = output
        buffer.reserveCapacity(self.chunkSize + 1024)
    }

    /// Lets `body` append to the buffer, then flushes if a chunk is full.
    mutating func append(_ body: (inout [UInt8]) -> Void) throws {
        body(&buffer)
        if buffer.count >= chunkSize { try flush() }
    }

    mutating func flush() throws {
        guard !buffer.isEmpty else { return }
        byteCount += buffer.count
        do {
            try output(buffer)
        } catch {
            throw ExportOutputError(underlying: error)
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// Marks an error thrown by the export's output (not by the store) on its way through the
/// store's read transaction, so the facade can report `.outputFailed` rather than `.storage`.
struct ExportOutputError: Error {
    let underlying: any Error
}
