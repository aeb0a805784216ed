/// Errors thrown by the BFV engine. Every decoder of external bytes throws one of these instead of trapping,
/// so a server can answer a malformed request with a clear reason and keep running.
public enum HEError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Encryption parameters that the engine (or the reference library) would not accept.
    case invalidParameters(String)
    /// A serialized object whose length, count or framing does not match what its context requires.
    case malformedSerialization(String)
    /// A packed coefficient that is not below its modulus.
    case coefficientOutOfRange(row: Int, index: Int, value: UInt64, modulus: UInt64)
    /// A seed for the seed-expansion PRNG that is not exactly 32 bytes.
    case invalidSeedLength(Int)
    /// A plaintext value that is not below the plaintext modulus.
    case plaintextValueOutOfRange(value: UInt64, modulus: UInt64)
    /// An operation whose operands do not fit together (formats, contexts, polynomial counts).
    case incompatibleOperands(String)
    /// A Galois element that is not odd and in `(1, 2N)`.
    case invalidGaloisElement(Int)
    /// The evaluation key lacks a key the operation needs.
    case missingKey(String)
    /// The correction factor is not invertible modulo the plaintext modulus.
    case notInvertible(value: UInt64, modulus: UInt64)

    public var description: String {
        switch self {
        case .invalidParameters(let why): return "invalid encryption parameters: \(why)"
        case .malformedSerialization(let why): return "malformed serialization: \(why)"
        case let .coefficientOutOfRange(row, index, value, modulus):
            return "coefficient \(value) at row \(row) index \(index) is not below modulus \(modulus)"
        case .invalidSeedLength(let n): return "seed must be 32 bytes, got \(n)"
        case let .plaintextValueOutOfRange(value, modulus):
            return "plaintext value \(value) is not below plaintext modulus \(modulus)"
        case .incompatibleOperands(let why): return "incompatible operands: \(why)"
        case .invalidGaloisElement(let g): return "invalid Galois element \(g)"
        case .missingKey(let why): return "missing key: \(why)"
        case let .notInvertible(value, modulus): return "\(value) is not invertible modulo \(modulus)"
        }
    }
}
