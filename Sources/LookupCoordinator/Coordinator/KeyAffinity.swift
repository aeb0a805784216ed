/// Which replica of a shard serves an owner's (User-Identifier's) queries while it has credit: rendezvous hashing
/// (highest random weight) over the holders' names. Each worker's parsed-key cache then holds its share of the
/// phones instead of every phone, the same owner lands on the same worker while the set of holders stays the same,
/// and a worker leaving moves only its own owners.
public enum KeyAffinity {
    /// The holder with the highest weight for `owner` (nil: no holders, or no owner).
    public static func replica(for owner: String, among holders: some Sequence<String>) -> String? {
        guard !owner.isEmpty else { return nil }
        return holders.max { (weight(owner, $0), $0) < (weight(owner, $1), $1) }
    }

    /// The workers a key uploaded by `owner` is pushed to: each shard's affinity replica among its holders.
    public static func replicas(for owner: String, holdersByShard: some Sequence<[String]>) -> Set<String> {
        Set(holdersByShard.compactMap { replica(for: owner, among: $0) })
    }

    /// A 64-bit weight of (owner, worker): FNV-1a over both names, then a SplitMix64 finalizer to spread it.
    public static func weight(_ owner: String, _ worker: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in owner.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        hash = (hash ^ 0xFF) &* 0x0000_0100_0000_01B3
        for byte in worker.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        hash = (hash ^ (hash >> 30)) &* 0xBF58_476D_1CE4_E5B9
        hash = (hash ^ (hash >> 27)) &* 0x94D0_49BB_1331_11EB
        return hash ^ (hash >> 31)
    }
}
