/// What a device's OS version understands of the config message (SPEC-PIR §7.7); older devices get a
/// down-levelled `PIRConfig`.
public struct ClientFeatures: Sendable, Equatable {
    /// `PIRConfig.pir_shard_configs` (one config repeated for every shard): iOS 18.2, macOS 15.2.
    public var fixedShardConfig: Bool
    /// The `double_mod` sharding function: iOS 18.2, macOS 15.2.
    public var doubleModSharding: Bool

    /// Everything the newest clients understand; also used for unknown platforms.
    public static let newest = ClientFeatures(fixedShardConfig: true, doubleModSharding: true)
    /// Clients before iOS 18.2 / macOS 15.2.
    public static let legacy = ClientFeatures(fixedShardConfig: false, doubleModSharding: false)

    /// Explicit feature flags.
    public init(fixedShardConfig: Bool, doubleModSharding: Bool) {
        self.fixedShardConfig = fixedShardConfig
        self.doubleModSharding = doubleModSharding
    }
}
