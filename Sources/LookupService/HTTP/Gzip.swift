import CZlib

/// gzip encoding of response bodies with the system zlib (`/config` answers are compressed when the client
/// accepts gzip, SPEC-PIR §7.1), and decoding for tests and clients.
public enum Gzip {
    /// A zlib failure.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// The zlib status code.
        public let code: Int32
        public var description: String { "zlib error \(code)" }
    }

    /// The gzip member (RFC 1952) of `input`.
    public static func compress(_ input: [UInt8], level: Int32 = 6) throws -> [UInt8] {
        var stream = z_stream()
        var status = deflateInit2_(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                                   Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else { throw Failure(code: status) }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 64)
        var input = input
        let produced: Int = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = uInt(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = uInt(outBuffer.count)
                status = deflate(&stream, Z_FINISH)
                return outBuffer.count - Int(stream.avail_out)
            }
        }
        guard status == Z_STREAM_END else { throw Failure(code: status) }
        output.removeLast(output.count - produced)
        return output
    }

    /// The bytes of a gzip member, refusing to produce more than `limit` bytes.
    public static func decompress(_ input: [UInt8], limit: Int = 64 << 20) throws -> [UInt8] {
        var stream = z_stream()
        var status = inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else { throw Failure(code: status) }
        defer { inflateEnd(&stream) }
        var input = input
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        try input.withUnsafeMutableBufferPointer { inBuffer in
            stream.next_in = inBuffer.baseAddress
            stream.avail_in = uInt(inBuffer.count)
            repeat {
                let produced = chunk.withUnsafeMutableBufferPointer { outBuffer -> Int in
                    stream.next_out = outBuffer.baseAddress
                    stream.avail_out = uInt(outBuffer.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return outBuffer.count - Int(stream.avail_out)
                }
                guard status == Z_OK || status == Z_STREAM_END else { throw Failure(code: status) }
                output.append(contentsOf: chunk[0..<produced])
                guard output.count <= limit else { throw Failure(code: Z_BUF_ERROR) }
                if produced == 0 && status == Z_OK && stream.avail_in == 0 { throw Failure(code: Z_DATA_ERROR) }
            } while status != Z_STREAM_END
        }
        return output
    }
}
