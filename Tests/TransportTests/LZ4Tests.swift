import ConformanceSupport
import LZ4
import Testing

/// LZ4 frames: round trips, streaming in pieces, and corrupted or oversized frames rejected.
@Suite("LZ4")
struct LZ4Tests {
    @Test("Round trip, streaming decode in pieces, corruption and limits")
    func frames() throws {
        var rng = TestRandom()
        let random = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let text = Array(String(repeating: "CallVeil shard bytes ", count: 20_000).utf8)
        for input in [[], random, text] {
            let frame = try LZ4Frame.compress(input)
            #expect(try LZ4Frame.decompress(frame, limit: input.count) == input)
            var decoder = try LZ4FrameDecoder(limit: input.count)
            var output: [UInt8] = []
            var offset = 0
            while offset < frame.count {
                let end = min(offset + 777, frame.count)
                output += try decoder.feed(Array(frame[offset..<end]))
                offset = end
            }
            #expect(decoder.finished && output == input)
        }
        let packed = try LZ4Frame.compress(text)
        #expect(packed.count * 20 < text.count)
        #expect(throws: LZ4Error.self) { try LZ4Frame.decompress(packed, limit: text.count - 1) }
        var corrupt = packed
        corrupt[corrupt.count / 2] ^= 0x55
        #expect(throws: LZ4Error.self) { try LZ4Frame.decompress(corrupt, limit: text.count) }
        #expect(throws: LZ4Error.self) { try LZ4Frame.decompress(Array(packed.dropLast(5)), limit: text.count) }
    }
}
