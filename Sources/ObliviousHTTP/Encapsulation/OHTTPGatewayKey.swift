import Crypto
import Foundation

/// One key of a gateway: its identifier, its X25519 private key and the symmetric algorithms it accepts. Its
/// public half is what clients fetch (`config`).
public struct OHTTPGatewayKey: Sendable {
    /// The key identifier requests name.
    public let keyID: UInt8
    /// The private key.
    public let privateKey: Curve25519.KeyAgreement.PrivateKey
    /// Suites accepted, in order of preference (each with the X25519 KEM).
    public let suites: [OHTTPSuite]

    /// A key from its parts; every suite must be one this build supports.
    public init(keyID: UInt8, privateKey: Curve25519.KeyAgreement.PrivateKey,
                suites: [OHTTPSuite] = [.x25519AES128GCM, .x25519ChaChaPoly]) throws {
        guard !suites.isEmpty, suites.allSatisfy(\.isSupported) else {
            throw OHTTPError(.unsupportedCipherSuite, "a gateway key needs supported suites")
        }
        self.keyID = keyID
        self.privateKey = privateKey
        self.suites = suites
    }

    /// A new random key.
    public static func generate(keyID: UInt8, suites: [OHTTPSuite] = [.x25519AES128GCM, .x25519ChaChaPoly]) throws -> OHTTPGatewayKey {
        try OHTTPGatewayKey(keyID: keyID, privateKey: Curve25519.KeyAgreement.PrivateKey(), suites: suites)
    }

    /// The public configuration clients encapsulate to.
    public var config: OHTTPKeyConfig {
        OHTTPKeyConfig(keyID: keyID, kem: 0x0020, publicKey: Array(privateKey.publicKey.rawRepresentation),
                       algorithms: suites.map { (kdf: $0.kdf, aead: $0.aead) })
    }
}
