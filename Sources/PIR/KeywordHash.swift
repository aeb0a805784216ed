import Crypto

/// The keyword hash of SPEC-PIR §2.2: the first 8 bytes of `SHA-256(keyword)`, read little-endian.
public enum KeywordHash {
    /// `LE64(SHA256(keyword)[0..8])`.
    public static func hash(_ keyword: [UInt8]) -> UInt64 {
        let digest = SHA256.hash(data: keyword)
        var value: UInt64 = 0
        var i = 0
        for byte in digest {
            if i == 8 { break }
            value |= UInt64(byte) << UInt64(8 * i)
            i += 1
        }
        return value
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
        var input = [UInt8](repeating: 0, count: 9)
        for i in 0..<8 { input[i] = UInt8(truncatingIfNeeded: keywordHash >> UInt64(56 - 8 * i)) }
        input[8] = counter
        return Int(KeywordHash.hash(input) % UInt64(bucketCount))
    }

    /// One candidate per hash function; a repeat of an earlier candidate is re-drawn with counters 1…10
    /// (and kept if still a repeat after 10 tries), as the reference does.
    public static func candidates(keywordHash: UInt64, bucketsPerTable: Int, hashFunctionCount: Int) -> [Int] {
        var out: [Int] = []
        out.reserveCapacity(hashFunctionCount)
        for _ in 0..<hashFunctionCount {
            var counter: UInt8 = 0
            var i = index(keywordHash: keywordHash, bucketCount: bucketsPerTable, counter: 0)
            while out.contains(i), counter < 10 {
                counter += 1
                i = index(keywordHash: keywordHash, bucketCount: bucketsPerTable, counter: counter)
            }
            out.append(i)
        }
        return out
    }
}
