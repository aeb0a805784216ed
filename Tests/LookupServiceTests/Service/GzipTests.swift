import ConformanceSupport
import LookupService
import ServiceTestSupport
import Testing

/// gzip encoding round trips random data and rejects corrupted members.
@Suite("gzip")
struct GzipTests {
    @Test("Round trip of random and repetitive data; corruption and size limits are errors")
    func roundTrip() throws {
        var rng = TestRandom()
        for size in [0, 1, 1000, 300_000] {
            let random = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            #expect(try Gzip.decompress(try Gzip.compress(random)) == random)
        }
        let repetitive = [UInt8](repeating: 7, count: 1 << 20)
        let packed = try Gzip.compress(repetitive)
        #expect(packed.count < 10_000)
        #expect(try Gzip.decompress(packed) == repetitive)
        #expect(throws: Gzip.Failure.self) { try Gzip.decompress(packed, limit: 1000) }
        var corrupt = packed
        corrupt[corrupt.count / 2] ^= 0xff
        #expect(throws: Gzip.Failure.self) { try Gzip.decompress(corrupt) }
        #expect(throws: Gzip.Failure.self) { try Gzip.decompress(Array(packed.prefix(packed.count / 2))) }
    }
}
