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
        temp.withUnsafeBytes { adopt($0) }
    }

    /// The Update's last step: the first 16 of `state`'s 32 bytes are the new key, the last 16 the new V.
    private mutating func adopt(_ state: UnsafeRawBufferPointer) {
        key = SymmetricKey(data: UnsafeRawBufferPointer(rebasing: state[0..<16]))
        v = UInt128(bigEndian: state.loadUnaligned(fromByteOffset: 16, as: UInt128.self))
    }

    /// NIST Generate without additional input: `count` bytes (at most 65536), then Update with zeros.
    public mutating func generate(count: Int) throws -> [UInt8] {
        [UInt8](try generateBytes(count: count))
    }

    /// `generate(count:)` as the keystream's own buffer, with no copy made. The Update that follows encrypts the next
    /// two counter values under the same key, so one CTR pass covers the bytes and the Update.
    public mutating func generateBytes(count: Int) throws -> Data {
        precondition(count >= 0 && count <= Self.maxGenerate, "generate request larger than the DRBG allows")
        let blocks = (count + 15) / 16
        let stream = try keystream(blocks: blocks + 2)
        // Update with zeros as provided data: the next key and V are the two blocks after the output's.
        stream.withUnsafeBytes { adopt(UnsafeRawBufferPointer(rebasing: $0[(blocks * 16)..<(blocks * 16 + 32)])) }
        return stream.prefix(count)
    }
}

/// A source of bytes for the samplers: either seed-expanded (reproducible) or the system's secure RNG.
public protocol ByteSource {
    /// Fills `buffer` with the next bytes of the stream.
    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer)
    /// Hands `body` the next `count` bytes of the stream: in place where the source holds them in one piece, so a
    /// sampler reading thousands of draws copies none.
    mutating func read<R>(_ count: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension ByteSource {
    public mutating func read<R>(_ count: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try readCopied(count, body)
    }

    /// `read` through a temporary copy `fill` writes: the default, and a stream's read that spans two of its buffers.
    mutating func readCopied<R>(_ count: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeTemporaryAllocation(byteCount: count, alignment: 16) { buffer in
            fill(buffer)
            return try body(UnsafeRawBufferPointer(buffer))
        }
    }
}

/// The reference's buffered wrapper over `NistCtrDrbg`: bytes come from successive `Generate(4096)` calls,
/// and a new one is made only once the previous 4096 bytes are used up.
public struct SeededByteStream: ByteSource, Sendable {
    /// Refill size; part of the format.
    public static let chunkSize = 4096
    private var drbg: NistCtrDrbg
    /// The last Generate's bytes, of which those from `position` on are not used yet.
    private var buffer = Data()
    private var position = 0

    /// A stream expanding `seed` (32 bytes).
    public init(seed: some Collection<UInt8>) throws {
        drbg = try NistCtrDrbg(seed: seed)
    }

    /// Makes the next Generate once the current one's bytes are used up.
    private mutating func refillIfEmpty() {
        guard position == buffer.count else { return }
        // AES-CTR over an in-memory buffer with a valid 16-byte key and nonce cannot fail. A key parse draws
        // hundreds of chunks.
        do { buffer = try drbg.generateBytes(count: Self.chunkSize) } catch {
            preconditionFailure("AES-CTR failed on a valid key")
        }
        position = 0
    }

    public mutating func fill(_ out: UnsafeMutableRawBufferPointer) {
        var written = 0
        while written < out.count {
            refillIfEmpty()
            let n = min(out.count - written, buffer.count - position)
            buffer.withUnsafeBytes { src in
                UnsafeMutableRawBufferPointer(rebasing: out[written..<(written + n)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: src[position..<(position + n)]))
            }
            written += n
            position += n
        }
    }

    public mutating func read<R>(_ count: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        refillIfEmpty()
        guard count <= buffer.count - position else { return try readCopied(count, body) }  // spans two Generates
        let start = position
        position += count
        return try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[start..<(start + count)])) }
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
