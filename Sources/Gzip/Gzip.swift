import CZlib

/// gzip (RFC 1952) of a whole buffer in memory, with zlib: for answers made once and sent many
/// times (the web app's files), not for streams. Knows nothing about HTTP.
public enum Gzip {
    /// zlib refused (`code`: its status, such as `Z_MEM_ERROR`).
    public struct Failure: Error, CustomStringConvertible {
        public let code: Int32
        public var description: String { "zlib could not compress (status \(code))" }
    }

    /// `input` as one gzip member, at `level` (1 fastest … 9 smallest).
    public static func compress(_ input: [UInt8], level: Int32 = 9) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        // windowBits 15 + 16: the gzip wrapper (header and CRC-32 trailer) instead of zlib's.
        let started = deflateInit2_(
            &stream, level, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard started == Z_OK else { throw Failure(code: started) }
        defer { deflateEnd(&stream) }
        // deflateBound covers the whole output (wrapper included) of one Z_FINISH call.
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(input.count))))
        let status = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
                stream.avail_in = UInt32(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = UInt32(target.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { throw Failure(code: status) }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }
}
