import Foundation
import LookupEngine
import LookupProtocol
import LookupStorage
import PrivacyPass
import Synchronization

/// The Privacy Pass issuer keys, one active key per user tier, persistent and rotated.
///
/// Each key is valid on `[notBefore, notAfter)`. A successor is generated `overlap` before the newest key's
/// `notAfter` minus `overlap`, with `notBefore = old.notAfter − overlap`: it is published in the directory (with
/// `not-before`) from the moment it exists, issues tokens from its `notBefore`, and the old key keeps verifying
/// until its `notAfter`, so a device's cached tokens (kept at most 24 h) stay valid across a rotation. Keys are PEM
/// files with mode 0600 in a 0700 directory, listed in `keys.json`; truncated key ids of unexpired keys differ.
public final class IssuerKeyRing: Sendable {
    /// One key of the ring.
    public struct Entry: Sendable {
        /// The tier it issues for.
        public let tier: String
        /// The signer.
        public let issuer: TokenIssuer
        /// Start of issuance.
        public let notBefore: Date
        /// End of acceptance.
        public let notAfter: Date
    }

    struct Record: Codable {
        var tier: String
        var file: String
        var notBefore: Double
        var notAfter: Double
    }

    /// The key directory (nil: the keys live in the shared store).
    public let directory: String?
    /// Validity of each key.
    public let lifetime: TimeInterval
    /// Publication lead and acceptance grace around a rotation.
    public let overlap: TimeInterval
    private let clock: @Sendable () -> Date
    /// What readers see (issuance and verification take it briefly, never across key generation).
    private let entries = Mutex<[Entry]>([])
    /// Serializes changes: held across RSA key generation (seconds), which readers never wait for.
    private let changing = Mutex<Void>(())

    private init(storedIn directory: String?, lifetime: TimeInterval, overlap: TimeInterval,
                 clock: @escaping @Sendable () -> Date) throws {
        guard lifetime > 2 * overlap, overlap > 0 else { throw ConfigError("issuer key lifetime must exceed twice the overlap") }
        self.directory = directory
        self.lifetime = lifetime
        self.overlap = overlap
        self.clock = clock
    }

    /// An empty ring whose keys live in the shared store (`PostgresIssuerKeyStore` fills and changes it).
    public convenience init(lifetime: TimeInterval = 30 * 86400, overlap: TimeInterval = 2 * 86400,
                            clock: @escaping @Sendable () -> Date = { Date() }) throws {
        try self.init(storedIn: nil, lifetime: lifetime, overlap: overlap, clock: clock)
    }

    /// Opens the ring in `directory`, loading stored keys; call `ensure(tiers:)` to create missing ones.
    public convenience init(directory: String, lifetime: TimeInterval = 30 * 86400, overlap: TimeInterval = 2 * 86400,
                            clock: @escaping @Sendable () -> Date = { Date() }) throws {
        try self.init(storedIn: directory, lifetime: lifetime, overlap: overlap, clock: clock)
        let files = try KeyDirectory(path: directory, suffix: ".pem")
        guard let records = try files.records(Record.self) else { return }
        let loaded = try records.map { record in
            let pem = String(decoding: try files.read(record.file), as: UTF8.self)
            return Entry(tier: record.tier, issuer: try TokenIssuer(pem: pem), notBefore: Date(timeIntervalSince1970: record.notBefore),
                         notAfter: Date(timeIntervalSince1970: record.notAfter))
        }
        entries.withLock { $0 = loaded }
    }

    /// Makes sure every tier has an active key and a successor when rotation is due; drops expired keys.
    /// Returns whether keys were created or dropped. (A ring on the shared store is changed through
    /// `PostgresIssuerKeyStore.ensure`, which makes the same decision once for every coordinator.)
    @discardableResult
    public func ensure(tiers: [String]) throws -> Bool {
        guard directory != nil else { throw ConfigError("an issuer key ring on the shared store is changed through the store") }
        return try changing.withLock { _ in
            guard let entries = try planned(from: self.entries.withLock { $0 }, tiers: tiers) else { return false }
            try save(entries)
            self.entries.withLock { [entries] in $0 = entries }
            return true
        }
    }

    /// The ring after expired keys are dropped and every tier given an active key and, when rotation is due, a
    /// successor; nil when nothing changes. Generating a key takes seconds.
    func planned(from current: [Entry], tiers: [String]) throws -> [Entry]? {
        let now = clock()
        var entries = current
        entries.removeAll { $0.notAfter <= now }
        var changed = entries.count != current.count
        for tier in Set(tiers).sorted() {
            let newest = entries.filter { $0.tier == tier }.max { $0.notBefore < $1.notBefore }
            let start: Date
            if let newest {
                guard now >= newest.notAfter.addingTimeInterval(-2 * overlap) else { continue }
                start = newest.notAfter.addingTimeInterval(-overlap)
            } else {
                start = now
            }
            entries.append(Entry(tier: tier, issuer: try Self.generate(avoiding: entries), notBefore: start,
                                 notAfter: start.addingTimeInterval(lifetime)))
            changed = true
        }
        return changed ? entries : nil
    }

    /// Replaces what the ring holds (a ring on the shared store, after reading it), in one order whoever
    /// produced the entries: by `notBefore`, then key id.
    func replace(_ entries: [Entry]) {
        let ordered = entries.sorted { ($0.notBefore, $0.issuer.tokenKey.keyID.hexString) < ($1.notBefore, $1.issuer.tokenKey.keyID.hexString) }
        self.entries.withLock { $0 = ordered }
    }

    /// Starts a rotation of `tier` now: a successor is published at once and issues after `overlap`; the
    /// current key stays accepted `overlap` longer than that.
    public func rotate(tier: String) throws {
        guard directory != nil else { throw ConfigError("an issuer key ring on the shared store is changed through the store") }
        try changing.withLock { _ in
            let now = clock()
            var entries = self.entries.withLock { $0 }
            let start = now.addingTimeInterval(overlap)
            for i in entries.indices where entries[i].tier == tier && entries[i].notAfter > start.addingTimeInterval(overlap) {
                let e = entries[i]
                entries[i] = Entry(tier: e.tier, issuer: e.issuer, notBefore: e.notBefore, notAfter: start.addingTimeInterval(overlap))
            }
            entries.append(Entry(tier: tier, issuer: try Self.generate(avoiding: entries), notBefore: start,
                                 notAfter: start.addingTimeInterval(lifetime)))
            try save(entries)
            self.entries.withLock { [entries] in $0 = entries }
        }
    }

    /// The key that issues for a tier now: the newest one whose `notBefore` has passed.
    public func issuer(forTier tier: String) -> TokenIssuer? {
        let now = clock()
        return entries.withLock { $0.filter { $0.tier == tier && $0.notBefore <= now && now < $0.notAfter }
            .max { $0.notBefore < $1.notBefore }?.issuer }
    }

    /// The accepted key with this key id, and its tier.
    public func acceptedKey(keyID: [UInt8]) -> (key: TokenKey, tier: String)? {
        let now = clock()
        return entries.withLock { entries in
            entries.first { $0.issuer.tokenKey.keyID == keyID && $0.notBefore <= now && now < $0.notAfter }
                .map { ($0.issuer.tokenKey, $0.tier) }
        }
    }

    /// Keys for the issuer directory: every unexpired key, with `notBefore` for those not issuing yet.
    public func published() -> [(key: TokenKey, notBefore: Date?)] {
        let now = clock()
        return entries.withLock { entries in
            entries.filter { now < $0.notAfter }.sorted { $0.notBefore < $1.notBefore }
                .map { ($0.issuer.tokenKey, $0.notBefore > now ? $0.notBefore : nil) }
        }
    }

    /// Key ids whose tokens are still accepted or will be (their nonces must be kept).
    public var liveKeyIDs: [[UInt8]] {
        let now = clock()
        return entries.withLock { $0.filter { now < $0.notAfter }.map(\.issuer.tokenKey.keyID) }
    }

    private static func generate(avoiding entries: [Entry]) throws -> TokenIssuer {
        let taken = Set(entries.map(\.issuer.tokenKey.truncatedKeyID))
        for _ in 0..<64 {
            let issuer = try TokenIssuer.generate()
            if !taken.contains(issuer.tokenKey.truncatedKeyID) { return issuer }
        }
        throw ConfigError("could not find an issuer key with a free truncated key id")
    }

    private func save(_ entries: [Entry]) throws {
        guard let directory else { return }
        let files = try KeyDirectory(path: directory, suffix: ".pem")
        var records: [Record] = []
        for entry in entries {
            let file = "\(entry.tier)-\(entry.issuer.tokenKey.keyID.prefix(8).hexString).pem"
            try files.writeOnce(file, Data(entry.issuer.pem.utf8))
            records.append(Record(tier: entry.tier, file: file, notBefore: entry.notBefore.timeIntervalSince1970,
                                  notAfter: entry.notAfter.timeIntervalSince1970))
        }
        try files.replaceManifest(records, files: Set(records.map(\.file)))
    }
}
