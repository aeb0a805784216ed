import Crypto
import Foundation
import LookupEngine
import LookupProtocol

/// Encryption at rest for a store several hosts share: values (evaluation keys, issuer private keys) are sealed
/// with AES-256-GCM under a key derived from the key-encryption key, bound to the row they belong to, and user
/// identifiers are stored only as keyed hashes, so a copy of the database reveals neither keys nor users.
/// The key-encryption key lives in a file on each coordinator, never in the database.
public struct StoreSealing: Sendable {
    private let valueKey: SymmetricKey
    private let userKey: SymmetricKey
    /// The first byte of every sealed value: the format (AES-256-GCM, 12-byte nonce, 16-byte tag).
    static let format: UInt8 = 1

    /// Sealing under `keyEncryptionKey` (32 bytes).
    public init(keyEncryptionKey: SymmetricKey) {
        valueKey = HKDF<SHA256>.deriveKey(inputKeyMaterial: keyEncryptionKey, info: Data("callveil store values v1".utf8),
                                          outputByteCount: 32)
        userKey = HKDF<SHA256>.deriveKey(inputKeyMaterial: keyEncryptionKey, info: Data("callveil store users v1".utf8),
                                         outputByteCount: 32)
    }

    /// Reads the key-encryption key from `path`: 32 random bytes, or their 64 hex digits. The file must not be
    /// readable by group or others.
    public static func load(path: String) throws -> StoreSealing {
        let attributes: [FileAttributeKey: Any]
        let contents: Data
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
            contents = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw StoreError(.invalidConfiguration, "cannot read the key-encryption key file \(path)")
        }
        if let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue, mode & 0o077 != 0 {
            throw StoreError(.invalidConfiguration, "key-encryption key file \(path) is readable by others (mode \(String(mode, radix: 8))); chmod 600 it")
        }
        let text = String(decoding: contents, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if contents.count == 32 { return StoreSealing(keyEncryptionKey: SymmetricKey(data: contents)) }
        if text.utf8.count == 64, let bytes = [UInt8](hex: text.utf8) { return StoreSealing(keyEncryptionKey: SymmetricKey(data: bytes)) }
        throw StoreError(.invalidConfiguration, "key-encryption key file \(path) must hold 32 bytes or 64 hex digits")
    }

    /// Writes a new random key-encryption key (64 hex digits) to `path`, mode 0600; refuses to overwrite one.
    public static func generate(path: String) throws {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.invalidConfiguration, "\(path) exists; a key-encryption key is never overwritten")
        }
        let key = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        let hex = key.hexString + "\n"
        guard FileManager.default.createFile(atPath: path, contents: Data(hex.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw StoreError(.invalidConfiguration, "cannot create \(path)")
        }
    }

    /// The stored form of a user identifier: HMAC-SHA256 under a key derived from the key-encryption key.
    public func userTag(_ user: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Data(user.utf8), using: userKey))
    }

    /// `value` sealed and bound to `context` (the row's identity), so a sealed value moved to another row fails.
    public func seal(_ value: [UInt8], context: [UInt8]) throws -> [UInt8] {
        let box = try AES.GCM.seal(value, using: valueKey, authenticating: context)
        guard let combined = box.combined else { throw StoreError(.corrupt, "sealing produced no output") }
        return [Self.format] + Array(combined)
    }

    /// The value `sealed` holds; `StoreError.corrupt` when it was sealed under another key or for another row.
    public func open(_ sealed: [UInt8], context: [UInt8]) throws -> [UInt8] {
        guard sealed.first == Self.format, sealed.count >= 1 + 12 + 16 else {
            throw StoreError(.corrupt, "sealed value has an unknown format")
        }
        do {
            let box = try AES.GCM.SealedBox(combined: sealed.dropFirst())
            return Array(try AES.GCM.open(box, using: valueKey, authenticating: context))
        } catch {
            throw StoreError(.corrupt, "sealed value fails authentication (wrong key-encryption key or tampered row)")
        }
    }
}
