import LookupProtocol
import Crypto
import Foundation

/// The Bloom filter a URL-filter app hands to `NEURLFilterManager` as its `NEURLFilterPrefilter`: in the format
/// Apple documents (bits hashed with 32-bit FNV-1a and 32-bit MurmurHash3, combined by double hashing), so the
/// device's own lookup finds every listed URL. Bit `i` is bit `i % 8` (least significant first) of byte `i / 8`;
/// the `k` positions of an item are `(fnv1a + j · murmur3(seed)) mod bitCount` in 32-bit arithmetic, `j < k`.
public struct BloomPrefilter: Sendable, Equatable {
    /// The default MurmurHash3 seed of Apple's Bloom filter tool.
    public static let defaultMurmurSeed: UInt32 = 0x9747_B28C
    /// Largest filter built or read: 2^32 − 1 bits (the positions are 32-bit).
    public static let maxBitCount = Int(UInt32.max)

    /// Number of bits (`bitCount` of the prefilter).
    public let bitCount: Int
    /// Number of hash positions per item (`hashCount`).
    public let hashCount: Int
    /// The MurmurHash3 seed (`murmurSeed`).
    public let murmurSeed: UInt32
    /// The bit array, `(bitCount + 7) / 8` bytes.
    public private(set) var bytes: [UInt8]

    /// An empty filter sized for `itemCount` items at `falsePositiveRate` as Apple's tool sizes it:
    /// `bitCount = ⌈−n·ln p / (ln 2)²⌉`, `hashCount = ⌈bitCount/n · ln 2⌉`.
    public init(itemCount: Int, falsePositiveRate: Double, murmurSeed: UInt32 = defaultMurmurSeed) throws {
        guard falsePositiveRate > 0, falsePositiveRate < 1 else {
            throw URLFilterError.badParameter("the false-positive rate must be between 0 and 1 (exclusive), not \(falsePositiveRate)")
        }
        let n = Double(max(itemCount, 1))
        let bits = (-n * Foundation.log(falsePositiveRate) / (Foundation.log(2.0) * Foundation.log(2.0))).rounded(.up)
        guard bits <= Double(Self.maxBitCount) else {
            throw URLFilterError.badParameter("\(itemCount) items at \(falsePositiveRate) need \(bits) bits, more than 2^32 − 1")
        }
        let bitCount = max(Int(bits), 8)
        let hashCount = max(Int((Double(bitCount) / n * Foundation.log(2.0)).rounded(.up)), 1)
        try self.init(bitCount: bitCount, hashCount: hashCount, murmurSeed: murmurSeed)
    }

    /// An empty filter with explicit parameters.
    public init(bitCount: Int, hashCount: Int, murmurSeed: UInt32 = defaultMurmurSeed) throws {
        guard bitCount >= 1, bitCount <= Self.maxBitCount else { throw URLFilterError.badParameter("bitCount \(bitCount) out of range") }
        guard hashCount >= 1, hashCount <= 64 else { throw URLFilterError.badParameter("hashCount \(hashCount) out of range (1…64)") }
        self.bitCount = bitCount
        self.hashCount = hashCount
        self.murmurSeed = murmurSeed
        bytes = [UInt8](repeating: 0, count: (bitCount + 7) / 8)
    }

    /// A filter read back from its bytes and parameters; the byte count must match the bit count.
    public init(bytes: [UInt8], bitCount: Int, hashCount: Int, murmurSeed: UInt32) throws {
        try self.init(bitCount: bitCount, hashCount: hashCount, murmurSeed: murmurSeed)
        guard bytes.count == self.bytes.count else {
            throw URLFilterError.badParameter("\(bytes.count) bytes for \(bitCount) bits (expected \(self.bytes.count))")
        }
        self.bytes = bytes
    }

    /// Adds an item (its UTF-8 bytes).
    public mutating func insert(_ item: String) {
        let (h1, h2) = Self.hashes(Array(item.utf8), seed: murmurSeed)
        let m = UInt32(bitCount)
        for j in 0..<UInt32(hashCount) {
            let bit = Int((h1 &+ j &* h2) % m)
            bytes[bit >> 3] |= 1 << UInt8(bit & 7)
        }
    }

    /// Whether the item may be in the set (false: certainly not).
    public func mayContain(_ item: String) -> Bool {
        let (h1, h2) = Self.hashes(Array(item.utf8), seed: murmurSeed)
        let m = UInt32(bitCount)
        for j in 0..<UInt32(hashCount) {
            let bit = Int((h1 &+ j &* h2) % m)
            if bytes[bit >> 3] & (1 << UInt8(bit & 7)) == 0 { return false }
        }
        return true
    }

    /// The prefilter's tag: the SHA-256 of its bytes in hex, as Apple's documentation suggests.
    public var tag: String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    /// The false-positive rate the filter's parameters predict for `itemCount` items: `(1 − e^(−k·n/m))^k`.
    public func predictedFalsePositiveRate(itemCount: Int) -> Double {
        let k = Double(hashCount)
        return Foundation.pow(1 - Foundation.exp(-k * Double(itemCount) / Double(bitCount)), k)
    }

    static func hashes(_ bytes: [UInt8], seed: UInt32) -> (UInt32, UInt32) {
        (fnv1a32(bytes), murmur3x86_32(bytes, seed: seed))
    }

    /// 32-bit FNV-1a.
    public static func fnv1a32(_ bytes: [UInt8]) -> UInt32 {
        var hash: UInt32 = 0x811C_9DC5
        for byte in bytes {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        return hash
    }

    /// 32-bit MurmurHash3 (x86_32).
    public static func murmur3x86_32(_ bytes: [UInt8], seed: UInt32) -> UInt32 {
        let c1: UInt32 = 0xCC9E_2D51, c2: UInt32 = 0x1B87_3593
        func rotl(_ x: UInt32, _ r: UInt32) -> UInt32 { (x << r) | (x >> (32 - r)) }
        var h = seed
        let blocks = bytes.count / 4
        for i in 0..<blocks {
            let b = i * 4
            var k = UInt32(bytes[b]) | UInt32(bytes[b + 1]) << 8 | UInt32(bytes[b + 2]) << 16 | UInt32(bytes[b + 3]) << 24
            k = rotl(k &* c1, 15) &* c2
            h = rotl(h ^ k, 13) &* 5 &+ 0xE654_6B64
        }
        var k: UInt32 = 0
        let tail = blocks * 4
        switch bytes.count & 3 {
        case 3: k ^= UInt32(bytes[tail + 2]) << 16; fallthrough
        case 2: k ^= UInt32(bytes[tail + 1]) << 8; fallthrough
        case 1:
            k ^= UInt32(bytes[tail])
            h ^= rotl(k &* c1, 15) &* c2
        default: break
        }
        h ^= UInt32(truncatingIfNeeded: bytes.count)
        h ^= h >> 16
        h = h &* 0x85EB_CA6B
        h ^= h >> 13
        h = h &* 0xC2B2_AE35
        h ^= h >> 16
        return h
    }
}
