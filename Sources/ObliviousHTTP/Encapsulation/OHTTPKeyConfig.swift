/// A gateway's key configuration (RFC 9458 §3): a key identifier, the KEM and its public key, and the symmetric
/// algorithms (KDF, AEAD) a client may pick. Published as a list in `application/ohttp-keys` (§3.2: each
/// configuration prefixed by its 2-byte length).
public struct OHTTPKeyConfig: Sendable, Equatable {
    /// The key identifier a request names.
    public let keyID: UInt8
    /// The KEM identifier.
    public let kem: UInt16
    /// The KEM public key (32 bytes for X25519).
    public let publicKey: [UInt8]
    /// (KDF, AEAD) pairs offered, in order of preference.
    public let algorithms: [(kdf: UInt16, aead: UInt16)]

    /// A configuration.
    public init(keyID: UInt8, kem: UInt16, publicKey: [UInt8], algorithms: [(kdf: UInt16, aead: UInt16)]) {
        self.keyID = keyID
        self.kem = kem
        self.publicKey = publicKey
        self.algorithms = algorithms
    }

    public static func == (lhs: OHTTPKeyConfig, rhs: OHTTPKeyConfig) -> Bool {
        lhs.keyID == rhs.keyID && lhs.kem == rhs.kem && lhs.publicKey == rhs.publicKey
            && lhs.algorithms.map { [$0.kdf, $0.aead] } == rhs.algorithms.map { [$0.kdf, $0.aead] }
    }

    /// The suites a request under this configuration may use.
    public var suites: [OHTTPSuite] { algorithms.map { OHTTPSuite(kem: kem, kdf: $0.kdf, aead: $0.aead) } }

    /// The encoding of one configuration.
    public var encoded: [UInt8] {
        var out: [UInt8] = [keyID, UInt8(kem >> 8), UInt8(kem & 0xFF)] + publicKey
        let length = algorithms.count * 4
        out += [UInt8(length >> 8), UInt8(length & 0xFF)]
        for (kdf, aead) in algorithms { out += [UInt8(kdf >> 8), UInt8(kdf & 0xFF), UInt8(aead >> 8), UInt8(aead & 0xFF)] }
        return out
    }

    /// Parses one configuration, which must fill `bytes` exactly. Only the X25519 KEM (32-byte keys) is known.
    public init(decoding bytes: [UInt8]) throws {
        var reader = KeyConfigReader(bytes)
        try self.init(reading: &reader)
        guard reader.isAtEnd else { throw OHTTPError(.invalidKeyConfig, "bytes after the key configuration") }
    }

    init(reading reader: inout KeyConfigReader) throws {
        let keyID = try reader.byte()
        let kem = try reader.uint16()
        guard kem == 0x0020 else { throw OHTTPError(.unsupportedCipherSuite, "KEM \(kem) is not supported") }
        let publicKey = try reader.bytes(32)
        let length = Int(try reader.uint16())
        guard length > 0, length % 4 == 0 else { throw OHTTPError(.invalidKeyConfig, "the algorithm list is not whole (KDF, AEAD) pairs") }
        var algorithms: [(UInt16, UInt16)] = []
        for _ in 0..<length / 4 { algorithms.append((try reader.uint16(), try reader.uint16())) }
        self.init(keyID: keyID, kem: kem, publicKey: publicKey, algorithms: algorithms)
    }

    /// `application/ohttp-keys`: each configuration with its 2-byte length.
    public static func encodeList(_ configs: [OHTTPKeyConfig]) -> [UInt8] {
        configs.flatMap { config -> [UInt8] in
            let bytes = config.encoded
            return [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
        }
    }

    /// Parses `application/ohttp-keys`; any encoding error rejects the whole list (RFC 9458 §3.2). Configurations
    /// of a KEM this build does not know are skipped.
    public static func decodeList(_ bytes: [UInt8]) throws -> [OHTTPKeyConfig] {
        var reader = KeyConfigReader(bytes)
        var configs: [OHTTPKeyConfig] = []
        while !reader.isAtEnd {
            let length = Int(try reader.uint16())
            let one = try reader.bytes(length)
            do { configs.append(try OHTTPKeyConfig(decoding: one)) } catch let error as OHTTPError where error.code == .unsupportedCipherSuite {
                continue
            }
        }
        return configs
    }
}

/// Reads key configurations; every failure is `invalidKeyConfig`.
struct KeyConfigReader {
    private let bytes: [UInt8]
    private var position = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    var isAtEnd: Bool { position == bytes.count }

    mutating func bytes(_ count: Int) throws -> [UInt8] {
        guard count <= bytes.count - position else { throw OHTTPError(.invalidKeyConfig, "the key configuration ends early") }
        defer { position += count }
        return Array(bytes[position..<position + count])
    }

    mutating func byte() throws -> UInt8 { try bytes(1)[0] }
    mutating func uint16() throws -> UInt16 {
        let two = try bytes(2)
        return UInt16(two[0]) << 8 | UInt16(two[1])
    }
}
