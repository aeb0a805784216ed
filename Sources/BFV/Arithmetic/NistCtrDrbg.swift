import _CryptoExtras
import Crypto
import FoundationEssentials

/// NIST SP 800-90A CTR_DRBG with AES-128, no derivation function, no personalization and no reseeding:
/// the generator the reference uses to expand a 32-byte seed (SPEC-HE §4).
public struct NistCtrDrbg: Sendable {
    /// Seed length in bytes (key length + block length).
    public static let seedCount = 32
    /// The most bytes one Generate returns.
    public static let maxGenerate = 65536
    /// Zeros the keystream is the encryption of (CTR over zeros; the most bytes and an Update's), shared so that no
    /// call allocates them.
    private static let zeros = [UInt8](repeating: 0, count: maxGenerate + seedCount)
    private var key: SymmetricKey
    /// V as a big-endian 128-bit counter.
    private var v: UInt128

    /// Instantiates the generator; throws unless the seed is exactly 32 bytes.
    public init(seed: some Collection<UInt8>) throws {
        guard seed.count == Self.seedCount else { throw HEError.invalidSeedLength(seed.count) }
        key = SymmetricKey(data: [UInt8](repeating: 0, count: 16))
        v = 0
        try update(Array(seed))
    }

    /// `E_key(V+1) ‖ E_key(V+2) ‖ …`, `blocks` blocks long; does not change V.
    private func keystream(blocks: Int) throws -> Data {
        let nonce = try withUnsafeBytes(of: (v &+ 1).bigEndian) { try AES._CTR.Nonce(nonceBytes: $0) }
        return try AES._CTR.encrypt(Self.zeros[0..<blocks * 16], using: key, nonce: nonce)
    }

    private mutating func update(_ provided: [UInt8]) throws {
        var temp = [UInt8](try keystream(blocks: 2))
        for i in 0..<32 { temp[i] ^= provided[i] }
        adopt(temp)
    }

    /// The Update's last step: the first 16 of `state`'s 32 bytes are the new key, the last 16 the new V.
    private mutating func adopt(_ state: [UInt8]) {
        key = SymmetricKey(data: state[0..<16])
        v = state[16..<32].reduce(UInt128(0)) { ($0 << 8) | UInt128($1) }
    }

    /// NIST Generate without additional input: `count` bytes (at most 65536), then Update with zeros.
    public mutating func generate(count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        try out.withUnsafeMutableBytes { try generate(into: $0) }
        return out
    }

    /// `generate(count:)` written into `out` (at most 65536 bytes), so a caller refilling a buffer allocates none.
    /// The Update that follows encrypts the next two counter values under the same key, so one CTR pass covers the
    /// bytes and the Update.
    public mutating func generate(into out: UnsafeMutableRawBufferPointer) throws {
        precondition(out.count <= Self.maxGenerate, "generate request larger than the DRBG allows")
        let blocks = (out.count + 15) / 16
        let stream = try keystream(blocks: blocks + 2)
        stream.copyBytes(to: out, count: out.count)
        // Update with zeros as provided data: the next key and V are the two blocks after the output's.
        adopt([UInt8](stream[stream.index(stream.startIndex, offsetBy: blocks * 16)...]))
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
                // AES-CTR over an in-memory buffer with a valid 16-byte key and nonce cannot fail. The buffer is
                // refilled in place: a key parse draws hundreds of chunks.
                if buffer.isEmpty { buffer = [UInt8](repeating: 0, count: Self.chunkSize) }
                do { try buffer.withUnsafeMutableBytes { try drbg.generate(into: $0) } } catch {
                    preconditionFailure("AES-CTR failed on a valid key")
                }
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
