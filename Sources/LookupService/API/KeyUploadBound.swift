import BFV
import LookupEngine
import LookupProtocol
import ServiceCore
import Synchronization

/// The largest `/key` body worth reading for the use cases loaded now: for each key config they offer, three times the
/// bytes of its key as devices send it (room for a key sent without seeds) plus 4 KiB, and 64 KiB for the
/// message; never above the per-key limit times the keys allowed per upload. A larger declared body is refused
/// 413 before it is read, so a flood of oversized uploads costs headers, not copies of its bytes. A config's key
/// size is measured once (one throwaway key) on the first upload that needs it.
final class KeyUploadBound: Sendable {
    private let keyBytes = Mutex<[[UInt8]: Int]>([:])

    /// The bound for the versions in `registry`, within `limits`.
    func bytes(registry: UseCaseRegistry, limits: LookupAPI.Limits) -> Int {
        var seen = Set<[UInt8]>()
        var total = 64 << 10
        for version in registry.allVersions where seen.insert(version.configuration.keyConfigHash).inserted {
            total += 3 * size(of: version) + (4 << 10)
        }
        return min(total, limits.maxKeysPerUpload * limits.maxKeyBytes, LookupRequestContext.maxBodyBytes)
    }

    private func size(of version: UseCaseVersion) -> Int {
        let hash = version.configuration.keyConfigHash
        if let known = keyBytes.withLock({ $0[hash] }) { return known }
        // A config whose key cannot be made here is not bounded by it: the per-key limit applies.
        let measured = (try? version.configuration.keyConfig.native().serializedKeyBytes(context: version.context)) ?? LookupRequestContext.maxBodyBytes
        keyBytes.withLock { $0[hash] = measured }
        return measured
    }
}
