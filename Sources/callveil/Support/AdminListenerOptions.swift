import ArgumentParser

/// `--admin-host` and `--admin-port`: the admin listener's address, over the config's `http.adminHost` and
/// `http.adminPort`.
struct AdminListenerOptions: ParsableArguments {
    @Option(help: "Admin listener address (/healthz, /metrics); default: http.adminHost of the config, else 127.0.0.1.")
    var adminHost: String?

    @Option(help: "Admin listener port (0 picks a free one); default: http.adminPort of the config, else 9090.")
    var adminPort: Int?

    func validate() throws {
        if let port = adminPort, !(0...65535).contains(port) { throw ValidationError("--admin-port must be in 0...65535") }
    }

    /// The override for `makeApplication`.
    var address: (host: String?, port: Int?) { (adminHost, adminPort) }
}
