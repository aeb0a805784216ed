import Hummingbird
import LookupProtocol
import NIOCore

/// Per-request state the middleware chain fills in for the PIR handlers.
public struct LookupRequestContext: RequestContext {
    /// Hummingbird's core storage.
    public var coreContext: CoreRequestContextStorage
    /// The `User-Identifier` header (namespace of the user's keys), once checked.
    public var userIdentifier: String?
    /// Config features of the client's OS version, from `User-Agent`.
    public var features: ClientFeatures = .newest
    /// The user tier of the verified Privacy Pass token, when authentication is on.
    public var tier: String?
    /// The connection the request came on (to notice its client going away).
    public let channel: any Channel

    /// A context for a new request.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// Bodies up to 10 MiB are accepted: evaluation keys exceed the usual 2 MiB (SPEC-PIR §7.1).
    public var maxUploadSize: Int { LookupRequestContext.maxBodyBytes }

    /// The request body limit.
    public static let maxBodyBytes = 10 << 20
}
