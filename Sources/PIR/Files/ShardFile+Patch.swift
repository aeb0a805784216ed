import BFV
import Crypto

extension ShardFile {
    /// The payloads of a version-2 shard file in memory, per sub-table and slot (nil where absent): the buckets a
    /// previous build stored, which an update restores its cuckoo table from. The caller has checked the file
    /// against its manifest digest; sizes are checked here again.
    public static func payloads(_ bytes: [UInt8], context: Context) throws -> [[[UInt8]?]] {
        let layout = try Layout(bytes, context: context)
        guard layout.version == 2 else { throw PIRError.malformedDatabase("a version-1 shard file stores no payloads") }
        return try (0..<layout.tableCount).map { t in try (0..<layout.slots).map { s in try layout.payload(t * layout.slots + s, in: bytes).map(Array.init) } }
    }

    /// The coefficient-form plaintexts of a version-2 shard file (nil where absent), per sub-table and slot,
    /// checked against its SHA-256: what a coordinator sends workers, with no transform on the way. Nil for a
    /// version-1 file, which holds the evaluation form.
    public static func plaintexts(_ bytes: [UInt8], context: Context) throws -> [[Plaintext?]]? {
        let layout = try Layout(bytes, context: context)
        guard layout.version == 2 else { return nil }
        try layout.checkDigest(of: bytes)
        return try (0..<layout.tableCount).map { t in try (0..<layout.slots).map { s in try layout.plaintext(t * layout.slots + s, in: bytes, context: context) } }
    }

    /// Writes re-encoded payloads over a version-2 shard file in memory (and their presence bytes) and recomputes
    /// the file's SHA-256: an in-place update's shard from the previous version's, without encoding the rest.
    public static func patch(_ bytes: inout [UInt8], with changes: [ProcessedDatabase.ChangedSlot], context: Context) throws {
        let layout = try Layout(bytes, context: context)
        guard layout.version == 2 else { throw PIRError.malformedDatabase("a version-1 shard file cannot be patched") }
        for change in changes {
            guard (0..<layout.tableCount).contains(change.table), (0..<layout.slots).contains(change.slot) else {
                throw PIRError.invalidDatabase("slot \(change.table)/\(change.slot) outside the shard file")
            }
            let payload = change.payload ?? []
            guard payload.count <= layout.slotBytes else {
                throw PIRError.invalidDatabase("a payload of \(payload.count) bytes for slots of \(layout.slotBytes)")
            }
            let index = change.table * layout.slots + change.slot
            bytes[layout.presenceStart + index] = change.payload == nil ? 0 : 1
            let start = layout.payloadOffset + index * layout.slotBytes
            bytes.replaceSubrange(start..<(start + payload.count), with: payload)
            bytes.replaceSubrange((start + payload.count)..<(start + layout.slotBytes), with: repeatElement(0, count: layout.slotBytes - payload.count))
        }
        let digest = Array(SHA256.hash(data: bytes[layout.headerBytes...]))
        bytes.replaceSubrange(layout.digestRange, with: digest)
    }
}
