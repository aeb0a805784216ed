import Crypto
import Foundation

/// The response key schedule (RFC 9458 §4.4), the same on both sides: from the secret exported from the request's
/// HPKE context, the request's encapsulated key and the response nonce, the AEAD key and nonce of the response.
enum OHTTPResponseKeys {
    /// The export label of the response secret.
    static let exportLabel = Array("message/bhttp response".utf8)

    /// Bytes of the exported secret and of the response nonce: max(Nn, Nk).
    static func secretBytes(_ suite: OHTTPSuite) -> Int { max(suite.aeadSizes.key, suite.aeadSizes.nonce) }

    /// The AEAD key and nonce: Extract(enc ‖ response_nonce, secret), then Expand with "key" and "nonce".
    static func derive(secret: SymmetricKey, enc: [UInt8], responseNonce: [UInt8], suite: OHTTPSuite) -> (key: SymmetricKey, nonce: [UInt8]) {
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: secret, salt: enc + responseNonce)
        let key = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("key".utf8), outputByteCount: suite.aeadSizes.key)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("nonce".utf8), outputByteCount: suite.aeadSizes.nonce)
        return (key, nonce.withUnsafeBytes { Array($0) })
    }

    /// `message/bhttp request` ‖ 0 ‖ header: the HPKE info of a request.
    static func requestInfo(header: [UInt8]) -> Data { Data(Array("message/bhttp request".utf8) + [0] + header) }
}
