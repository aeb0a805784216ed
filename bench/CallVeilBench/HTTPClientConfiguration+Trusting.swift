import AsyncHTTPClient
import NIOSSL

extension HTTPClient.Configuration {
    /// A client configuration that trusts `ca` (a PEM file: the test certificate of a local TLS listener) when given.
    static func trusting(_ ca: String?) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        if let ca {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(ca)
            configuration.tlsConfiguration = tls
        }
        return configuration
    }
}
