import CLZ4

/// LZ4 frame format (liblz4): whole-buffer compression, and decompression of one frame with an output bound.
public enum LZ4Frame {
    /// Compresses `input` into one LZ4 frame (with content checksum).
    public static func compress(_ input: [UInt8]) throws -> [UInt8] {
        var preferences = LZ4F_preferences_t()
        preferences.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled
        preferences.frameInfo.contentSize = UInt64(input.count)
        let bound = LZ4F_compressFrameBound(input.count, &preferences)
        var output = [UInt8](repeating: 0, count: bound)
        let written = output.withUnsafeMutableBytes { out in
            input.withUnsafeBytes { inp in
                LZ4F_compressFrame(out.baseAddress, out.count, inp.baseAddress, inp.count, &preferences)
            }
        }
        guard LZ4F_isError(written) == 0 else { throw LZ4Error(written) }
        output.removeLast(output.count - written)
        return output
    }

    /// Decompresses one frame, refusing to produce more than `limit` bytes and rejecting trailing data.
    public static func decompress(_ input: [UInt8], limit: Int) throws -> [UInt8] {
        var decoder = try LZ4FrameDecoder(limit: limit)
        let output = try decoder.feed(input)
        guard decoder.finished else { throw LZ4Error(message: "truncated LZ4 frame") }
        return output
    }
}

/// Streaming decompression of one LZ4 frame fed in pieces (e.g. network chunks).
public struct LZ4FrameDecoder: ~Copyable {
    private let context: OpaquePointer
    private let limit: Int
    private var produced = 0
    /// Whether the frame ended.
    public private(set) var finished = false

    /// A decoder producing at most `limit` bytes.
    public init(limit: Int) throws {
        var ctx: OpaquePointer?
        let status = LZ4F_createDecompressionContext(&ctx, UInt32(LZ4F_VERSION))
        guard LZ4F_isError(status) == 0, let ctx else { throw LZ4Error(status) }
        context = ctx
        self.limit = limit
    }

    deinit { LZ4F_freeDecompressionContext(context) }

    /// Decompresses the next piece of the frame; returns the bytes it yields.
    public mutating func feed(_ input: [UInt8]) throws -> [UInt8] {
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        var offset = 0
        while offset < input.count {
            guard !finished else { throw LZ4Error(message: "data after the end of the LZ4 frame") }
            var consumed = input.count - offset
            var producedNow = chunk.count
            let hint = chunk.withUnsafeMutableBytes { out in
                input.withUnsafeBytes { inp in
                    LZ4F_decompress(context, out.baseAddress, &producedNow, inp.baseAddress! + offset, &consumed, nil)
                }
            }
            guard LZ4F_isError(hint) == 0 else { throw LZ4Error(hint) }
            offset += consumed
            produced += producedNow
            guard produced <= limit else { throw LZ4Error(message: "LZ4 frame expands beyond \(limit) bytes") }
            output.append(contentsOf: chunk[0..<producedNow])
            if hint == 0 { finished = true }
            if consumed == 0 && producedNow == 0 { break }
        }
        return output
    }
}
