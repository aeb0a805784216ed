/// A configuration (service, cluster, use case files) that cannot be used.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public let description: String
    /// An error with a reason.
    public init(_ description: String) { self.description = description }
}
