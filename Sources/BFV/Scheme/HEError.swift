/// Errors thrown by the BFV engine. Every decoder of external bytes throws one of these instead of trapping,
/// so a server can answer a malformed request with a clear reason and keep running.
public struct HEError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable error code, in the style of swift-certificates' `CertificateError`: compare codes, not messages.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable {
            case invalidParameters, malformedSerialization, coefficientOutOfRange, invalidSeedLength, plaintextValueOutOfRange, incompatibleOperands, invalidGaloisElement, missingKey, notInvertible
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }
        /// The code's name, stable across releases.
        public var description: String { base.rawValue }
        /// Encryption parameters that the engine (or the reference library) would not accept.
        public static let invalidParameters = Code(.invalidParameters)
        /// A serialized object whose length, count or framing does not match what its context requires.
        public static let malformedSerialization = Code(.malformedSerialization)
        /// A packed coefficient that is not below its modulus.
        public static let coefficientOutOfRange = Code(.coefficientOutOfRange)
        /// A seed for the seed-expansion PRNG that is not exactly 32 bytes.
        public static let invalidSeedLength = Code(.invalidSeedLength)
        /// A plaintext value that is not below the plaintext modulus.
        public static let plaintextValueOutOfRange = Code(.plaintextValueOutOfRange)
        /// An operation whose operands do not fit together (formats, contexts, polynomial counts).
        public static let incompatibleOperands = Code(.incompatibleOperands)
        /// A Galois element that is not odd and in `(1, 2N)`.
        public static let invalidGaloisElement = Code(.invalidGaloisElement)
        /// The evaluation key lacks a key the operation needs.
        public static let missingKey = Code(.missingKey)
        /// The correction factor is not invertible modulo the plaintext modulus.
        public static let notInvertible = Code(.notInvertible)
    }

    /// What went wrong.
    public let code: Code
    /// The reason, for logs and clients (never secrets).
    public let description: String

    private init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    /// Encryption parameters that the engine (or the reference library) would not accept.
    public static func invalidParameters(_ why: String) -> HEError {
        HEError(.invalidParameters, "invalid encryption parameters: \(why)")
    }

    /// A serialized object whose length, count or framing does not match what its context requires.
    public static func malformedSerialization(_ why: String) -> HEError {
        HEError(.malformedSerialization, "malformed serialization: \(why)")
    }

    /// A packed coefficient that is not below its modulus.
    public static func coefficientOutOfRange(row: Int, index: Int, value: UInt64, modulus: UInt64) -> HEError {
        HEError(.coefficientOutOfRange, "coefficient \(value) at row \(row) index \(index) is not below modulus \(modulus)")
    }

    /// A seed for the seed-expansion PRNG that is not exactly 32 bytes.
    public static func invalidSeedLength(_ n: Int) -> HEError {
        HEError(.invalidSeedLength, "seed must be 32 bytes, got \(n)")
    }

    /// A plaintext value that is not below the plaintext modulus.
    public static func plaintextValueOutOfRange(value: UInt64, modulus: UInt64) -> HEError {
        HEError(.plaintextValueOutOfRange, "plaintext value \(value) is not below plaintext modulus \(modulus)")
    }

    /// An operation whose operands do not fit together (formats, contexts, polynomial counts).
    public static func incompatibleOperands(_ why: String) -> HEError {
        HEError(.incompatibleOperands, "incompatible operands: \(why)")
    }

    /// A Galois element that is not odd and in `(1, 2N)`.
    public static func invalidGaloisElement(_ g: Int) -> HEError {
        HEError(.invalidGaloisElement, "invalid Galois element \(g)")
    }

    /// The evaluation key lacks a key the operation needs.
    public static func missingKey(_ why: String) -> HEError {
        HEError(.missingKey, "missing key: \(why)")
    }

    /// The correction factor is not invertible modulo the plaintext modulus.
    public static func notInvertible(value: UInt64, modulus: UInt64) -> HEError {
        HEError(.notInvertible, "\(value) is not invertible modulo \(modulus)")
    }
}
