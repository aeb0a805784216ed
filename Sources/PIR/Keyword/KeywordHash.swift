import Crypto

/// The keyword hash of SPEC-PIR §2.2: the first 8 bytes of `SHA-256(keyword)`, read little-endian.
public enum KeywordHash {
    /// `LE64(SHA256(keyword)[0..8])`.
    public static func hash(_ keyword: [UInt8]) -> UInt64 {
        keyword.withUnsafeBytes { hash(bytes: $0) }
    }

    /// `LE64(SHA256(bytes)[0..8])` without copying the bytes into an array (the cuckoo builder hashes millions).
    static func hash(bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hasher = SHA256()
        hasher.update(bufferPointer: bytes)
        return hasher.finalize().withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
    }

    /// The hash of a keyword string's UTF-8 bytes (phone numbers in E.164 form).
    public static func hash(_ keyword: String) -> UInt64 { hash(Array(keyword.utf8)) }
}

/// How keywords are spread over shards (SPEC-PIR §2.3).
public enum ShardingFunction: Sendable, Hashable {
    /// `shard = kwHash mod shardCount` (also the meaning of an unset sharding function).
    case sha256
    /// `shard = (kwHash mod otherShardCount) mod shardCount`: makes this use case's shard a function of another's.
    case doubleMod(otherShardCount: Int)

    /// The shard a keyword hash belongs to.
    public func shardIndex(keywordHash: UInt64, shardCount: Int) -> Int {
        precondition(shardCount > 0, "shard count must be positive")
        switch self {
        case .sha256:
            return Int(keywordHash % UInt64(shardCount))
        case .doubleMod(let other):
            return Int((keywordHash % UInt64(max(other, 1))) % UInt64(shardCount))
        }
    }
}

/// Cuckoo candidate buckets (SPEC-PIR §2.4), which client and server must compute bit-exactly.
public enum CuckooHashing {
    /// `LE64(SHA256(BE64(hash) ‖ [counter])[0..8]) mod bucketCount`.
    public static func index(keywordHash: UInt64, bucketCount: Int, counter: UInt8) -> Int {
        var input = (keywordHash.bigEndian, counter)  // 9 bytes: BE64(hash) ‖ counter
        return withUnsafeBytes(of: &input) { raw in
            Int(KeywordHash.hash(bytes: UnsafeRawBufferPointer(rebasing: raw[0..<9])) % UInt64(bucketCount))
        }
    }

    /// One candidate per hash function; a repeat of an earlier candidate is re-drawn with counters 1…10
    /// (and kept if still a repeat after 10 tries), as the reference does.
    public static func candidates(keywordHash: UInt64, bucketsPerTable: Int, hashFunctionCount: Int) -> [Int] {
        var out: [Int] = []
        out.reserveCapacity(hashFunctionCount)
        // Every function starts again at counter 0, so each counter's index is computed once and reused.
        var byCounter: [Int] = []
        byCounter.reserveCapacity(hashFunctionCount + 1)
        func indexAt(_ counter: Int) -> Int {
            while byCounter.count <= counter {
                byCounter.append(index(keywordHash: keywordHash, bucketCount: bucketsPerTable, counter: UInt8(byCounter.count)))
            }
            return byCounter[counter]
        }
        for _ in 0..<hashFunctionCount {
            var counter = 0
            var i = indexAt(0)
            while out.contains(i), counter < 10 {
                counter += 1
                i = indexAt(counter)
            }
            out.append(i)
        }
        return out
    }
}
