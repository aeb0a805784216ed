import ConformanceSupport
import BFV
import Foundation
import LookupProtocol
import SwiftProtobuf
import Testing

/// Bytes from the network go through protobuf parsing and then engine validation; neither may trap, and every
/// rejection is a typed error.
@Suite("Malformed protobuf messages")
struct MalformedMessageTests {
    static let context: Context = {
        guard let c = try? Context(preset: .n_4096_logq_27_28_28_logt_5) else { preconditionFailure("preset context") }
        return c
    }()

    /// Runs a parse; true if it succeeded, false if it threw one of the typed errors a server maps to 400.
    /// Any other error fails the test by propagating.
    static func accepts(_ parse: () throws -> Void) throws -> Bool {
        do {
            try parse()
            return true
        } catch is SwiftProtobuf.BinaryDecodingError {
            return false
        } catch is HEError {
            return false
        } catch is ProtocolError {
            return false
        }
    }

    /// Parses bytes as a query ciphertext the way a server does; returns whether it was accepted.
    static func acceptQuery(_ bytes: [UInt8]) throws -> Bool {
        try accepts {
            let proto = try ProtoSerializedCiphertext(serializedBytes: bytes)
            _ = try Ciphertext(deserialize: try proto.native(), context: context, moduliCount: 2, format: .coeff)
        }
    }

    /// Parses bytes as an evaluation key the way a server does; returns whether it was accepted.
    static func acceptKey(_ bytes: [UInt8]) throws -> Bool {
        try accepts {
            let proto = try ProtoEvaluationKey(serializedBytes: bytes)
            _ = try EvaluationKey(deserialize: try proto.native(), context: context)
        }
    }

    @Test("query ciphertexts: truncations, random bytes and bit flips")
    func queries() throws {
        var rng = TestRandom()
        let sk = SecretKey(context: Self.context)
        let ct = try Self.context.encrypt(Self.context.encodeCoefficients([5]), secretKey: sk)
        let good: [UInt8] = try ProtoSerializedCiphertext(ct.serialize()).serializedBytes()
        #expect(try Self.acceptQuery(good))
        for cut in stride(from: 0, to: good.count, by: 997) { #expect(try !Self.acceptQuery(Array(good.prefix(cut)))) }
        #expect(try !Self.acceptQuery([]))
        for _ in 0..<100 {
            let junk = (0..<Int.random(in: 1...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = try Self.acceptQuery(junk)
            var flipped = good
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                flipped[Int.random(in: 0..<flipped.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
            }
            _ = try Self.acceptQuery(flipped)
        }
        // An unset oneof is a typed protocol error.
        #expect(throws: ProtocolError.self) { try ProtoSerializedCiphertext().native() }
    }

    @Test("evaluation keys: truncations and bit flips")
    func keys() throws {
        var rng = TestRandom()
        let sk = SecretKey(context: Self.context)
        let key = try EvaluationKey(config: EvaluationKeyConfig(galoisElements: [2049], hasRelinearizationKey: true), secretKey: sk)
        let good = try ProtoEvaluationKey(key.serialize()).deterministicBytes()
        #expect(try Self.acceptKey(good))
        for cut in stride(from: 1, to: good.count, by: 9973) { #expect(try !Self.acceptKey(Array(good.prefix(cut)))) }
        for _ in 0..<30 {
            var flipped = good
            flipped[Int.random(in: 0..<flipped.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
            _ = try Self.acceptKey(flipped)
        }
    }

    @Test("encryption parameters outside what the engine supports are rejected")
    func parameters() throws {
        var p = ProtoEncryptionParameters(EncryptionParameters(.n_4096_logq_27_28_28_logt_5))
        #expect(try p.native() == EncryptionParameters(.n_4096_logq_27_28_28_logt_5))
        p.heScheme = .bgv
        #expect(throws: ProtocolError.self) { try p.native() }
        p.heScheme = .bfv
        p.errorStdDev = .stddev64
        #expect(throws: ProtocolError.self) { try p.native() }
        p.errorStdDev = .stddev32
        p.polynomialDegree = .max
        #expect(throws: ProtocolError.self) { try p.native() }
        p.polynomialDegree = 4096
        p.coefficientModuli = [134_176_769, 12]
        #expect(throws: HEError.self) { try p.native() }
    }
}
