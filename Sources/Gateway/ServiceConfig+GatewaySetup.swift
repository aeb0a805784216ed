import Foundation
import LookupEngine
import LookupStorage
import ObliviousHTTP
import ServiceCore

extension ServiceConfig.Gateway {
    /// The key ring these settings describe: in the key directory, or (`shared`) filled from the shared store.
    public func makeKeyRing(shared: Bool) throws -> GatewayKeyRing {
        try GatewayKeyRing(directory: shared ? nil : keyDirectory ?? "gateway-keys", lifetime: lifetime, overlap: overlap,
                           suites: offeredSuites, maxRequestBytes: requestLimit)
    }

    /// The replay cache these settings describe.
    public func makeReplayCache() -> GatewayReplayCache {
        GatewayReplayCache(window: TimeInterval(replayWindowSeconds ?? 600), capacity: maxReplayEntries ?? 1_000_000)
    }
}
