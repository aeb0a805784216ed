import BFV
import Foundation
@testable import PIR
import Testing

/// Inputs `make fuzz` found that broke a decoder, each kept here beside the code it broke (and as a file under
/// `fuzz/regressions/` that the harness replays).
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    @Test("A reference shard declaring more slots than its bytes can hold is refused, not reserved (FuzzShardFiles)")
    func referenceShardSlotCount() throws {
        let (shard, context) = try smallBlockShard()
        let parameters = shard.parameters
        let perTable = parameters.chunkCount * parameters.slotsPerChunk
        // The fuzzer's input had a count of 0x44000020 in 108 bytes: about 27 GB reserved before the first slot.
        let count = UInt32((Int(UInt32.max) / perTable) * perTable)
        var bytes: [UInt8] = [1] + withUnsafeBytes(of: count.littleEndian) { Array($0) }
        bytes += [UInt8](repeating: 0, count: 103)
        #expect(throws: PIRError.self) { try ProcessedDatabase(referenceFormat: bytes, parameters: parameters, context: context) }
        // The fuzzer's own input, byte for byte (its first byte picked the reference-shard reader; it was found with the
        // fuzz fixture's parameters, so here an earlier check may refuse it).
        let found = try #require(Data(base64Encoded: FuzzRegressionTests.referenceShardInput))
        #expect(throws: PIRError.self) {
            try ProcessedDatabase(referenceFormat: Array(found.dropFirst()), parameters: parameters, context: context)
        }
    }

    /// fuzz/regressions/FuzzShardFiles/reference-shard-slot-count, base64.
    static let referenceShardInput = "AwEgAABEaWN0aW9uYQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAlwAAAAAAAAAAAAAACAAAAAAAAAAAAAAAAgAAAAAAACefSs5KZOkAAAAAAAAAAAAAAAAAAAAAAAAA"
}
