import LookupProtocol
import Synchronization

/// The use cases the service answers for, with the last few config versions of each (SPEC-PIR §6.4). Readers
/// take a snapshot; a reload swaps versions in atomically, so queries in flight keep the version they started with.
public final class UseCaseRegistry: Sendable {
    private let versions = Mutex<[String: [UseCaseVersion]]>([:])  // oldest first, newest last

    /// An empty registry.
    public init() {}

    /// Adds `version` as the newest of its use case (an existing version with the same id is replaced and moved
    /// to newest) and keeps at most `keep` versions; returns the versions dropped.
    @discardableResult
    public func install(_ version: UseCaseVersion, keep: Int) -> [UseCaseVersion] {
        versions.withLock { all in
            var list = all[version.name, default: []].filter { $0.configuration.configID != version.configuration.configID }
            list.append(version)
            let dropped = Array(list.prefix(max(list.count - max(keep, 1), 0)))
            list.removeFirst(dropped.count)
            all[version.name] = list
            return dropped
        }
    }

    /// Removes a use case; returns its versions.
    @discardableResult
    public func remove(name: String) -> [UseCaseVersion] {
        versions.withLock { $0.removeValue(forKey: name) ?? [] }
    }

    /// The newest version of a use case.
    public func newest(_ name: String) -> UseCaseVersion? {
        versions.withLock { $0[name]?.last }
    }

    /// The retained version of a use case with this config id.
    public func version(_ name: String, configID: [UInt8]) -> UseCaseVersion? {
        versions.withLock { $0[name]?.first { $0.configuration.configID == configID } }
    }

    /// Whether the use case exists.
    public func contains(_ name: String) -> Bool {
        versions.withLock { $0[name] != nil }
    }

    /// Use-case names, sorted.
    public var names: [String] {
        versions.withLock { $0.keys.sorted() }
    }

    /// Every retained version, for health reports.
    public var allVersions: [UseCaseVersion] {
        versions.withLock { all in all.keys.sorted().flatMap { name in all[name] ?? [] } }
    }

    /// A retained version whose evaluation-key config has this hash (to validate uploaded keys).
    public func version(keyConfigHash: [UInt8]) -> UseCaseVersion? {
        versions.withLock { all in
            for name in all.keys.sorted() {
                if let v = all[name]?.last(where: { $0.configuration.keyConfigHash == keyConfigHash }) { return v }
            }
            return nil
        }
    }
}
