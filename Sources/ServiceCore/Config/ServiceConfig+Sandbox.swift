import Foundation

extension ServiceConfig {
    /// This config (its paths already absolute, as `load` makes them) with every store the service writes moved
    /// into `directory`: keys, nonces, issuer and gateway keys, reports; no shared store, plain HTTP on loopback, the
    /// gateway on with in-process targets. The datasets stay the config's. `callveil doctor --local` runs the
    /// provider's config this way, so a check never reads or writes the provider's state.
    public func sandboxed(in directory: String) -> ServiceConfig {
        var config = self
        config.stateDirectory = directory
        config.database = nil
        var keys = config.keys ?? .init()
        keys.database = "\(directory)/keys.sqlite"
        config.keys = keys
        var privacyPass = config.privacyPass ?? .init()
        privacyPass.keyDirectory = "\(directory)/issuer-keys"
        privacyPass.nonceDatabase = "\(directory)/nonces.sqlite"
        config.privacyPass = privacyPass
        var gateway = config.gateway ?? .init()
        gateway.enabled = true
        gateway.keyDirectory = "\(directory)/gateway-keys"
        gateway.targets = nil
        config.gateway = gateway
        if var reports = config.reports {
            reports.database = "\(directory)/reports.sqlite"
            reports.reporterKeyFile = "\(directory)/reporter.key"
            config.reports = reports
        }
        var http = config.http ?? .init()
        http.protocol = nil
        http.tlsCertificateFile = nil
        http.tlsKeyFile = nil
        http.adminHost = "127.0.0.1"
        http.adminPort = 0
        config.http = http
        return config
    }
}
