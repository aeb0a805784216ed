import Crypto
import Foundation

/// The HPKE algorithms of one Oblivious HTTP exchange, by their IANA identifiers (RFC 9180 §7): this build
/// supports the X25519 KEM with HKDF-SHA256, and AES-128-GCM, AES-256-GCM or ChaCha20-Poly1305.
public struct OHTTPSuite: Sendable, Hashable {
    /// KEM identifier (0x0020, DHKEM(X25519, HKDF-SHA256)).
    public let kem: UInt16
    /// KDF identifier (0x0001, HKDF-SHA256).
    public let kdf: UInt16
    /// AEAD identifier (0x0001 AES-128-GCM, 0x0002 AES-256-GCM, 0x0003 ChaCha20-Poly1305).
    public let aead: UInt16

    /// X25519, HKDF-SHA256, AES-128-GCM: the suite every client supports.
    public static let x25519AES128GCM = OHTTPSuite(kem: 0x0020, kdf: 0x0001, aead: 0x0001)
    /// X25519, HKDF-SHA256, ChaCha20-Poly1305.
    public static let x25519ChaChaPoly = OHTTPSuite(kem: 0x0020, kdf: 0x0001, aead: 0x0003)

    /// A suite by identifiers.
    public init(kem: UInt16, kdf: UInt16, aead: UInt16) {
        self.kem = kem
        self.kdf = kdf
        self.aead = aead
    }

    /// Whether this build implements the suite.
    public var isSupported: Bool { kem == 0x0020 && kdf == 0x0001 && [0x0001, 0x0002, 0x0003].contains(aead) }

    /// swift-crypto's HPKE ciphersuite.
    func hpke() throws -> HPKE.Ciphersuite {
        guard isSupported else {
            throw OHTTPError(.unsupportedCipherSuite, "KEM \(kem), KDF \(kdf), AEAD \(aead) is not supported")
        }
        let aead: HPKE.AEAD = switch self.aead {
        case 0x0001: .AES_GCM_128
        case 0x0002: .AES_GCM_256
        default: .chaChaPoly
        }
        return HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: aead)
    }

    /// The AEAD's key and nonce sizes (Nk, Nn).
    var aeadSizes: (key: Int, nonce: Int) {
        switch aead {
        case 0x0001: (16, 12)
        default: (32, 12)
        }
    }

    /// Seals with the AEAD: ciphertext followed by its tag.
    func seal(_ plaintext: [UInt8], key: SymmetricKey, nonce: [UInt8]) throws -> [UInt8] {
        if aead == 0x0003 {
            let box = try ChaChaPoly.seal(plaintext, using: key, nonce: ChaChaPoly.Nonce(data: nonce))
            return Array(box.ciphertext) + Array(box.tag)
        }
        let box = try AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(data: nonce))
        return Array(box.ciphertext) + Array(box.tag)
    }

    /// Opens what `seal` made; a wrong key or a changed byte is `decryptionFailed`.
    func open(_ sealed: [UInt8], key: SymmetricKey, nonce: [UInt8]) throws -> [UInt8] {
        guard sealed.count >= 16 else { throw OHTTPError(.invalidMessage, "shorter than an AEAD tag") }
        let ciphertext = sealed.dropLast(16), tag = sealed.suffix(16)
        do {
            if aead == 0x0003 {
                return Array(try ChaChaPoly.open(ChaChaPoly.SealedBox(nonce: ChaChaPoly.Nonce(data: nonce), ciphertext: ciphertext, tag: tag), using: key))
            }
            return Array(try AES.GCM.open(AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: ciphertext, tag: tag), using: key))
        } catch {
            throw OHTTPError(.decryptionFailed, "the response does not open")
        }
    }
}
