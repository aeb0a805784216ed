import BFV
import Crypto

extension ShardFile {
    /// Writes re-encoded plaintexts over a shard file in memory (their words and presence bytes) and recomputes the
    /// file's SHA-256: an in-place update's shard from the previous version's, without encoding the rest again.
    /// The caller has checked the previous file against its manifest digest; sizes are checked here again.
    public static func patch(_ bytes: inout [UInt8], with changes: [ProcessedDatabase.ChangedSlot], context: Context) throws {
        let layout = try Layout(bytes, context: context)
        let words = layout.slotBytes / 4
        for change in changes {
            guard (0..<layout.tableCount).contains(change.table), (0..<layout.slots).contains(change.slot) else {
                throw PIRError.invalidDatabase("slot \(change.table)/\(change.slot) outside the shard file")
            }
            let index = change.table * layout.slots + change.slot
            bytes[layout.presenceStart + index] = change.plaintext == nil ? 0 : 1
            let start = layout.matrixOffset + index * layout.slotBytes
            guard let plaintext = change.plaintext else {
                for i in start..<(start + layout.slotBytes) { bytes[i] = 0 }
                continue
            }
            let data = plaintext.poly.data
            guard data.count == words, plaintext.poly.context == context.ciphertextContext else {
                throw PIRError.invalidDatabase("a plaintext of \(data.count) words for slots of \(words)")
            }
            bytes.withUnsafeMutableBytes { raw in
                for (i, v) in data.enumerated() {
                    raw.storeBytes(of: UInt32(truncatingIfNeeded: v).littleEndian, toByteOffset: start + 4 * i, as: UInt32.self)
                }
            }
        }
        let digest = Array(SHA256.hash(data: bytes[fixedHeader...]))
        bytes.replaceSubrange((fixedHeader - 32)..<fixedHeader, with: digest)
    }
}
