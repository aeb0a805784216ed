import Foundation

/// What a `RotatingKeyRing` needs to know of one kind of secret key (Privacy Pass issuer keys, Oblivious HTTP
/// gateway keys): how it is named, stored, generated, and what the ring derives from its live keys.
public protocol RotatingKeyKind: Sendable {
    /// The key.
    associatedtype Key: Sendable
    /// What readers use, rebuilt from the entries whenever they change (a gateway over the keys, say).
    associatedtype Derived: Sendable

    /// The ring's name in the shared store and in errors ("issuer", "gateway").
    var ring: String { get }
    /// The suffix of its key files in a key directory.
    var fileSuffix: String { get }
    /// How long a successor is published before it takes over: zero (used at once) or the overlap.
    var publishesAhead: Bool { get }

    /// The key's identifier, unique among unexpired keys of the ring.
    func identifier(of key: Key) -> [UInt8]
    /// The private key's stored form.
    func secret(of key: Key) -> Data
    /// A key from its stored parts; `identifier` is the recorded one (nil in older key directories, where the
    /// key's own identifier is taken). A key that does not parse, or does not match its identifier, is an error
    /// that names no secret.
    func key(identifier: [UInt8]?, secret: Data) throws -> Key
    /// A new key whose identifier is not among `entries`' (ascending by start).
    func generate(avoiding entries: [RotatingKeyEntry<Key>]) throws -> Key
    /// The context a stored key is sealed under (`StoreSealing`): binds a row to its identifier.
    func sealingContext(identifier: [UInt8]) -> [UInt8]
    /// What readers use, from the entries ascending by start.
    func derive(from entries: [RotatingKeyEntry<Key>]) throws -> Derived
}

/// One key of a ring: its group (an issuer key's tier; one group for gateway keys), when it starts being used
/// and when it stops being accepted.
public struct RotatingKeyEntry<Key: Sendable>: Sendable {
    /// The group it serves.
    public let group: String
    /// The key.
    public let key: Key
    /// Start of use (an issuer key issues from here; it is published from its creation).
    public let notBefore: Date
    /// End of acceptance.
    public let notAfter: Date

    /// An entry.
    public init(group: String, key: Key, notBefore: Date, notAfter: Date) {
        self.group = group
        self.key = key
        self.notBefore = notBefore
        self.notAfter = notAfter
    }
}
