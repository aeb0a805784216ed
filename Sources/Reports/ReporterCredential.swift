import Crypto
import Foundation
import LookupEngine
import LookupStorage

/// The credential a reporting extension puts in its reports' `userInfo`: the app gets it once from
/// `POST /reporter-credential` with its user token, and the service checks it on every report. It names a
/// pseudonym derived from the user token with a server key (one pseudonym per account, so one account's reports
/// on a number count once), and carries a MAC over the pseudonym, so a client cannot invent one. The server
/// stores the pseudonym only, never the user token. 32 bytes, base64url without padding: 16 of pseudonym, 16 of
/// MAC (HMAC-SHA256, truncated).
public struct ReporterCredential: Sendable {
    private let key: SymmetricKey

    /// Credentials under a 32-byte key.
    public init(key: SymmetricKey) {
        self.key = key
    }

    /// Credentials under the key in `path`, created (32 random bytes, owner-only) when missing. Every front door
    /// that takes reports needs the same file.
    public static func load(path: String) throws -> ReporterCredential {
        if let data = FileManager.default.contents(atPath: path) {
            guard data.count == 32 else { throw ConfigError("\(path): a reporter key has 32 bytes, not \(data.count)") }
            return ReporterCredential(key: SymmetricKey(data: data))
        }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let key = SymmetricKey(size: .bits256)
        let bytes = key.withUnsafeBytes { Data($0) }
        guard FileManager.default.createFile(atPath: path, contents: bytes, attributes: [.posixPermissions: 0o600]) else {
            throw ConfigError("cannot write the reporter key \(path)")
        }
        return ReporterCredential(key: key)
    }

    /// The credential of the account with `userToken` (the same every time).
    public func issue(userToken: String) -> String {
        let pseudonym = Array(HMAC<SHA256>.authenticationCode(for: Array("callveil reporter|".utf8) + Array(userToken.utf8), using: key).prefix(16))
        return Self.base64url(pseudonym + mac(pseudonym))
    }

    /// The reporter pseudonym (hex) of a valid credential, nil otherwise.
    public func verify(_ credential: String) -> String? {
        guard credential.utf8.count == 43, let bytes = Self.decodeBase64url(credential), bytes.count == 32 else { return nil }
        let pseudonym = Array(bytes.prefix(16))
        let expected = mac(pseudonym)
        // Constant-time comparison of the MAC.
        guard zip(expected, bytes.suffix(16)).reduce(UInt8(0), { $0 | ($1.0 ^ $1.1) }) == 0 else { return nil }
        return pseudonym.map { String(format: "%02x", $0) }.joined()
    }

    private func mac(_ pseudonym: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array("callveil reporter credential|".utf8) + pseudonym, using: key).prefix(16))
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Whether a byte is one of `[A-Za-z0-9-_]`: base64url's alphabet, also the characters of report ids and
    /// categories.
    static func isURLSafe(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x2D || b == 0x5F
    }

    static func decodeBase64url(_ text: String) -> [UInt8]? {
        guard text.utf8.allSatisfy(isURLSafe) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).map { [UInt8]($0) }
    }
}
