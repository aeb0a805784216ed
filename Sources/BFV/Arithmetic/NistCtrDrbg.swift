import _CryptoExtras
import Crypto

/// NIST SP 800-90A CTR_DRBG with AES-128, no derivation function, no personalization and no reseeding:
/// the generator the reference uses to expand a 32-byte seed (SPEC-HE §4).
public struct NistCtrDrbg: Sendable {
    /// Seed length in bytes (key length + block length).
    public static let seedCount = 32
    private var key: [UInt8]
    /// V as a big-endian 128-bit counter.
    private var v: UInt128

    /// Instantiates the generator; throws unless the seed is exactly 32 bytes.
    public init(seed: some Collection<UInt8>) throws {
        guard seed.count == Self.seedCount else { throw HEError.invalidSeedLength(seed.count) }
        key = [UInt8](repeating: 0, count: 16)
        v = 0
        try update(Array(seed))
    }

    /// `E_key(V+1) ‖ E_key(V+2) ‖ …`, `blocks` blocks long; does not change V.
    private func keystream(blocks: Int) throws -> [UInt8] {
        var counter = v &+ 1
        var nonce = [UInt8](repeating: 0, count: 16)
        for i in 0..<16 {
            nonce[15 - i] = UInt8(truncatingIfNeeded: counter)
            counter >>= 8
        }
        let zeros = [UInt8](repeating: 0, count: blocks * 16)
        let out = try AES._CTR.encrypt(zeros, using: SymmetricKey(data: key), nonce: AES._CTR.Nonce(nonceBytes: nonce))
        return [UInt8](out)
    }

    private mutating func update(_ provided: [UInt8]) throws {
        var temp = try keystream(blocks: 2)
        for i in 0..<32 { temp[i] ^= provided[i] }
        key = Array(temp[0..<16])
        var nv: UInt128 = 0
        for b in temp[16..<32] { nv = (nv << 8) | UInt128(b) }
        v = nv
    }

    /// NIST Generate without additional input: `count` bytes (at most 65536), then Update with zeros.
    public mutating func generate(count: Int) throws -> [UInt8] {
        precondition(count >= 0 && count <= 65536, "generate request larger than the DRBG allows")
        let blocks = (count + 15) / 16
        let out = try keystream(blocks: blocks)
        v = v &+ UInt128(blocks)
        try update([UInt8](repeating: 0, count: 32))
        return Array(out.prefix(count))
    }
}

/// A source of bytes for the samplers: either seed-expanded (reproducible) or the system's secure RNG.
public protocol ByteSource {
    /// Fills `buffer` with the next bytes of the stream.
    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer)
}

/// The reference's buffered wrapper over `NistCtrDrbg`: bytes come from successive `Generate(4096)` calls,
/// and a new one is made only once the previous 4096 bytes are used up.
public struct SeededByteStream: ByteSource, Sendable {
    /// Refill size; part of the format.
    public static let chunkSize = 4096
    private var drbg: NistCtrDrbg
    private var buffer: [UInt8] = []
    private var position = 0

    /// A stream expanding `seed` (32 bytes).
    public init(seed: some Collection<UInt8>) throws {
        drbg = try NistCtrDrbg(seed: seed)
    }

    public mutating func fill(_ out: UnsafeMutableRawBufferPointer) {
        var written = 0
        while written < out.count {
            if position == buffer.count {
                // AES-CTR over an in-memory buffer with a valid 16-byte key and nonce cannot fail.
                guard let next = try? drbg.generate(count: Self.chunkSize) else {
                    preconditionFailure("AES-CTR failed on a valid key")
                }
                buffer = next
                position = 0
            }
            let n = min(out.count - written, buffer.count - position)
            buffer.withUnsafeBytes { src in
                out.baseAddress!.advanced(by: written).copyMemory(
                    from: src.baseAddress!.advanced(by: position), byteCount: n)
            }
            written += n
            position += n
        }
    }

    /// The next `count` bytes.
    public mutating func next(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { fill($0) }
        return out
    }
}

/// The operating system's cryptographically secure generator, for secret keys, errors and fresh seeds.
public struct SystemByteSource: ByteSource, Sendable {
    /// Creates the source.
    public init() {}

    public mutating func fill(_ out: UnsafeMutableRawBufferPointer) {
        var rng = SystemRandomNumberGenerator()
        var i = 0
        while i < out.count {
            var word = rng.next()
            let n = min(8, out.count - i)
            withUnsafeBytes(of: &word) { src in
                out.baseAddress!.advanced(by: i).copyMemory(from: src.baseAddress!, byteCount: n)
            }
            i += n
        }
    }

    /// A fresh 32-byte seed.
    public static func seed() -> [UInt8] {
        var s = SystemByteSource()
        var out = [UInt8](repeating: 0, count: NistCtrDrbg.seedCount)
        out.withUnsafeMutableBytes { s.fill($0) }
        return out
    }
}
