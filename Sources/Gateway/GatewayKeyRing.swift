import Crypto
import Foundation
import LookupEngine
import LookupStorage
import ObliviousHTTP
import ServiceCore
import Synchronization

/// The Oblivious HTTP gateway's keys, persistent and rotated with overlap.
///
/// The newest key is published first and used by clients that fetch the configurations; a successor is created
/// `overlap` before the newest key's end, so a client that fetched the old configuration just before keeps being
/// answered for `overlap`. Every unexpired key is published and accepted. Keys are raw X25519 files with mode 0600
/// in a 0700 directory, listed in `keys.json`, or rows sealed in the shared store (`PostgresGatewayKeyStore`).
/// Key identifiers of unexpired keys differ.
public final class GatewayKeyRing: Sendable {
    /// One key.
    public struct Entry: Sendable {
        /// The key (its identifier and private half).
        public let key: OHTTPGatewayKey
        /// When it was created and published.
        public let created: Date
        /// End of acceptance.
        public let notAfter: Date
    }

    struct Record: Codable {
        var keyID: UInt8
        var file: String
        var created: Double
        var notAfter: Double
    }

    /// The key directory (nil: the keys live in the shared store).
    public let directory: String?
    /// Validity of each key.
    public let lifetime: TimeInterval
    /// Acceptance of a key after its successor appears.
    public let overlap: TimeInterval
    /// Suites every key offers.
    public let suites: [OHTTPSuite]
    /// Largest encapsulated request the gateway opens.
    public let maxRequestBytes: Int
    private let clock: @Sendable () -> Date
    private let state = Mutex<(entries: [Entry], gateway: OHTTPGateway?)>(([], nil))
    private let changing = Mutex<Void>(())

    /// An empty ring; `directory` nil keeps the keys in the shared store (`PostgresGatewayKeyStore` fills it),
    /// otherwise the stored keys are loaded. Call `ensure()` (or the store's) to create keys.
    public init(directory: String?, lifetime: TimeInterval = 30 * 86400, overlap: TimeInterval = 2 * 86400,
                suites: [OHTTPSuite] = [.x25519AES128GCM, .x25519ChaChaPoly], maxRequestBytes: Int = (10 << 20) + (64 << 10),
                clock: @escaping @Sendable () -> Date = { Date() }) throws {
        guard lifetime > 2 * overlap, overlap > 0 else { throw ConfigError("gateway key lifetime must exceed twice the overlap") }
        guard !suites.isEmpty, suites.allSatisfy(\.isSupported) else { throw ConfigError("gateway keys need supported suites") }
        self.directory = directory
        self.lifetime = lifetime
        self.overlap = overlap
        self.suites = suites
        self.maxRequestBytes = maxRequestBytes
        self.clock = clock
        guard let directory else { return }
        let files = try KeyDirectory(path: directory, suffix: ".x25519")
        guard let records = try files.records(Record.self) else { return }
        try replace(records.map { record in
            try entry(keyID: record.keyID, rawPrivateKey: try files.read(record.file), created: record.created, notAfter: record.notAfter)
        })
    }

    /// An entry from stored parts (a file or a row); a key that does not parse is an error naming no secret.
    func entry(keyID: UInt8, rawPrivateKey: Data, created: Double, notAfter: Double) throws -> Entry {
        let privateKey: Curve25519.KeyAgreement.PrivateKey
        do { privateKey = try .init(rawRepresentation: rawPrivateKey) } catch {
            throw ConfigError("gateway key \(keyID) is not an X25519 private key")
        }
        return Entry(key: try OHTTPGatewayKey(keyID: keyID, privateKey: privateKey, suites: suites),
                     created: Date(timeIntervalSince1970: created), notAfter: Date(timeIntervalSince1970: notAfter))
    }

    /// The gateway over the unexpired keys (nil before any key exists).
    public var gateway: OHTTPGateway? { state.withLock { $0.gateway } }

    /// Every key held, newest first.
    public var entries: [Entry] { state.withLock { $0.entries } }

    /// The configurations to publish: every unexpired key, newest first (clients take the first they support).
    public var publishedConfigs: [UInt8] {
        let now = clock()
        return OHTTPKeyConfig.encodeList(entries.filter { now < $0.notAfter }.map(\.key.config))
    }

    /// Whether the key with identifier `keyID` is held but past its `notAfter` now: its requests are refused at
    /// once, not only after the next maintenance pass drops it.
    public func hasExpired(keyID: UInt8) -> Bool {
        let now = clock()
        return entries.contains { $0.key.keyID == keyID && now >= $0.notAfter }
    }

    /// Seconds a client may cache the configurations: half the overlap, at most a day.
    public var cacheSeconds: Int { Int(min(overlap / 2, 86400)) }

    /// Drops expired keys and creates the first key or a successor when due (in the key directory); returns
    /// whether anything changed. A ring on the shared store is changed through `PostgresGatewayKeyStore.ensure`.
    @discardableResult
    public func ensure() throws -> Bool {
        guard directory != nil else { throw ConfigError("a gateway key ring on the shared store is changed through the store") }
        return try changing.withLock { _ in
            guard let planned = try planned(from: entries) else { return false }
            try save(planned)
            try replace(planned)
            return true
        }
    }

    /// Publishes a successor now: the current keys stay accepted for `overlap` from now at most.
    public func rotate() throws {
        guard directory != nil else { throw ConfigError("a gateway key ring on the shared store is changed through the store") }
        try changing.withLock { _ in
            let now = clock()
            var kept = entries.filter { now < $0.notAfter }.map {
                Entry(key: $0.key, created: $0.created, notAfter: min($0.notAfter, now.addingTimeInterval(overlap)))
            }
            kept.append(try successor(avoiding: kept, now: now))
            try save(kept)
            try replace(kept)
        }
    }

    /// The ring after expired keys are dropped and a key created when none is current or the newest is due for
    /// a successor; nil when nothing changes.
    func planned(from current: [Entry]) throws -> [Entry]? {
        let now = clock()
        var entries = current.filter { now < $0.notAfter }
        var changed = entries.count != current.count
        let newest = entries.max { $0.created < $1.created }
        if newest.map({ now >= $0.notAfter.addingTimeInterval(-overlap) }) ?? true {
            entries.append(try successor(avoiding: entries, now: now))
            changed = true
        }
        return changed ? entries : nil
    }

    /// A new key whose identifier follows the newest key's and is not in use.
    private func successor(avoiding entries: [Entry], now: Date) throws -> Entry {
        let taken = Set(entries.map(\.key.keyID))
        let start = entries.max { $0.created < $1.created }.map { Int($0.key.keyID) + 1 } ?? Int.random(in: 0...255)
        guard let id = (0..<256).lazy.map({ UInt8((start + $0) % 256) }).first(where: { !taken.contains($0) }) else {
            throw ConfigError("every gateway key identifier is in use")
        }
        do {
            return Entry(key: try OHTTPGatewayKey.generate(keyID: id, suites: suites), created: now,
                         notAfter: now.addingTimeInterval(lifetime))
        } catch {
            throw ConfigError("cannot create a gateway key: \(error)")
        }
    }

    /// Replaces what the ring holds, newest first.
    func replace(_ entries: [Entry]) throws {
        let ordered = entries.sorted { ($0.created, $0.key.keyID) > ($1.created, $1.key.keyID) }
        let gateway = ordered.isEmpty ? nil : try OHTTPGateway(keys: ordered.map(\.key), maxRequestBytes: maxRequestBytes)
        state.withLock { $0 = (ordered, gateway) }
    }

    private func save(_ entries: [Entry]) throws {
        guard let directory else { return }
        let files = try KeyDirectory(path: directory, suffix: ".x25519")
        var records: [Record] = []
        for entry in entries {
            let file = "gateway-\(entry.key.keyID)-\(Int(entry.created.timeIntervalSince1970)).x25519"
            try files.writeOnce(file, entry.key.privateKey.rawRepresentation)
            records.append(Record(keyID: entry.key.keyID, file: file, created: entry.created.timeIntervalSince1970,
                                  notAfter: entry.notAfter.timeIntervalSince1970))
        }
        try files.replaceManifest(records, files: Set(records.map(\.file)))
    }
}
