import BFV
import Foundation
import LookupProtocol

/// One loaded configuration version of a use case: what `/config` advertises and `/queries` routes by.
public struct UseCaseVersion: Sendable {
    /// Use-case name.
    public let name: String
    /// The advertised configuration and its id.
    public let configuration: UseCaseConfiguration
    /// The BFV context of the configuration's parameters.
    public let context: Context
    /// When this version was loaded.
    public let loadedAt: Date

    /// A version.
    public init(name: String, configuration: UseCaseConfiguration, context: Context, loadedAt: Date = Date()) {
        self.name = name
        self.configuration = configuration
        self.context = context
        self.loadedAt = loadedAt
    }

    /// The config id (hex), for logs.
    public var configIDHex: String { configuration.configID.prefix(8).hexString }
}
