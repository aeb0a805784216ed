import CZeroMQ

/// A CURVE key pair (Curve25519), Z85-encoded (40 characters each) as ZeroMQ and configs use them.
public struct CurveKeyPair: Sendable, Equatable, Codable {
    /// Public key, Z85.
    public let publicKey: String
    /// Secret key, Z85.
    public let secretKey: String

    /// A key pair from stored Z85 strings, checked for form.
    public init(publicKey: String, secretKey: String) throws {
        guard Self.isZ85Key(publicKey), Self.isZ85Key(secretKey) else { throw ZMQError(code: EINVAL, operation: "CURVE key must be 40 Z85 characters") }
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// A fresh key pair.
    public static func generate() throws -> CurveKeyPair {
        var publicKey = [CChar](repeating: 0, count: 41)
        var secretKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&publicKey, &secretKey) == 0 else { throw ZMQError.last("zmq_curve_keypair") }
        return try CurveKeyPair(publicKey: cString(publicKey), secretKey: cString(secretKey))
    }

    /// Whether `key` has the form of a Z85-encoded 32-byte key.
    public static func isZ85Key(_ key: String) -> Bool {
        let alphabet = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#")
        return key.count == 40 && key.allSatisfy { alphabet.contains($0) }
    }

    /// The 32 raw bytes of a Z85 key.
    public static func decode(_ key: String) throws -> [UInt8] {
        guard isZ85Key(key) else { throw ZMQError(code: EINVAL, operation: "not a Z85 key") }
        var out = [UInt8](repeating: 0, count: 32)
        guard zmq_z85_decode(&out, key) != nil else { throw ZMQError.last("zmq_z85_decode") }
        return out
    }

    /// Makes `socket` a CURVE server with this key pair (the coordinator). Where libzmq offers
    /// `ZMQ_ZAP_ENFORCE_DOMAIN` (93, a draft option) it is set, so a handshake fails when no ZAP handler answers;
    /// returns whether it was. Either way the coordinator accepts only messages that carry a ZAP user id.
    @discardableResult
    public func configureServer(_ socket: ZMQSocket, zapDomain: String) throws -> Bool {
        try socket.set(ZMQ_CURVE_SERVER, 1)
        try socket.set(ZMQ_CURVE_SECRETKEY, string: secretKey)
        try socket.set(ZMQ_ZAP_DOMAIN, string: zapDomain)
        return (try? socket.set(Self.zapEnforceDomain, 1)) != nil
    }

    /// `ZMQ_ZAP_ENFORCE_DOMAIN`, defined by zmq.h only in draft builds.
    static let zapEnforceDomain: Int32 = 93

    /// Makes `socket` a CURVE client with this key pair, trusting `serverPublicKey` (a worker).
    public func configureClient(_ socket: ZMQSocket, serverPublicKey: String) throws {
        try socket.set(ZMQ_CURVE_SERVERKEY, string: serverPublicKey)
        try socket.set(ZMQ_CURVE_PUBLICKEY, string: publicKey)
        try socket.set(ZMQ_CURVE_SECRETKEY, string: secretKey)
    }
}
