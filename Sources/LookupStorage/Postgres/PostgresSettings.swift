import Foundation
import LookupEngine
import NIOSSL
import PostgresNIO

/// Where the shared PostgreSQL store is and how to use it, from `postgres://user[:password]@host[:port]/database`
/// with libpq's `sslmode` and `sslrootcert` parameters, a pool size and an optional password file, which keeps the
/// password out of the config file. The modes mean what they mean to libpq: `disable` plain TCP; `allow` and
/// `prefer` (the default) TLS when the server offers it, `require` TLS always, all three without checking the
/// server's certificate (so Debian's self-signed default works), unless `sslrootcert` names a CA file, which makes
/// `require` check the chain as `verify-ca` does; `verify-ca` checks the chain against `sslrootcert` (or the system's
/// roots with `sslrootcert=system`); `verify-full` also checks that the certificate names the host.
public struct PostgresSettings: Sendable {
    /// Host name or address.
    public var host: String
    /// TCP port.
    public var port: Int
    /// Role to connect as.
    public var username: String
    /// The role's password (from the URL or the password file).
    public var password: String?
    /// Database name.
    public var database: String
    /// `disable`, `allow`, `prefer`, `require`, `verify-ca` or `verify-full`.
    public var sslMode: String
    /// The CA file (PEM) the server's certificate is checked against, or `system` for the system's roots.
    public var sslRootCert: String?
    /// Connections kept at most per process.
    public var poolSize: Int
    /// Deadline of one store operation, connection wait included.
    public var operationTimeout: Duration = .seconds(3)

    /// libpq's TLS modes.
    public static let sslModes = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]

    /// Connections per process when the config does not say.
    public static let defaultPoolSize = 16

    /// Settings from a URL; `passwordFile`, when given, overrides a password in the URL.
    public init(url: String, poolSize: Int = defaultPoolSize, passwordFile: String? = nil) throws {
        guard let components = URLComponents(string: url), let scheme = components.scheme,
              scheme == "postgres" || scheme == "postgresql" else {
            throw StoreError(.invalidConfiguration, "database URL must be postgres://user@host:port/database")
        }
        guard let host = components.host, !host.isEmpty else { throw StoreError(.invalidConfiguration, "database URL has no host") }
        guard let user = components.user, !user.isEmpty else { throw StoreError(.invalidConfiguration, "database URL has no user") }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            throw StoreError(.invalidConfiguration, "database URL must name one database (postgres://user@host/database)")
        }
        let port = components.port ?? 5432
        guard (1...65535).contains(port) else { throw StoreError(.invalidConfiguration, "database port \(port) is out of range") }
        guard (1...1000).contains(poolSize) else { throw StoreError(.invalidConfiguration, "database pool size must be 1...1000") }
        for item in components.queryItems ?? [] where !["sslmode", "sslrootcert"].contains(item.name) {
            throw StoreError(.invalidConfiguration, "database URL parameter \(item.name) is not supported (sslmode and sslrootcert are)")
        }
        let sslMode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer"
        guard Self.sslModes.contains(sslMode) else {
            throw StoreError(.invalidConfiguration, "sslmode must be one of \(Self.sslModes.joined(separator: ", ")), not \(sslMode)")
        }
        let rootCert = components.queryItems?.first(where: { $0.name == "sslrootcert" })?.value
        if sslMode.hasPrefix("verify"), rootCert == nil {
            throw StoreError(.invalidConfiguration, "sslmode=\(sslMode) needs sslrootcert: the CA file that signed the server's certificate, or sslrootcert=system")
        }
        if let rootCert, rootCert != "system", !FileManager.default.isReadableFile(atPath: rootCert) {
            throw StoreError(.invalidConfiguration, "sslrootcert \(rootCert) cannot be read")
        }
        self.sslRootCert = rootCert
        self.host = host
        self.port = port
        self.username = user
        self.password = components.password
        self.database = database
        self.sslMode = sslMode
        self.poolSize = poolSize
        if let passwordFile {
            guard let text = try? String(contentsOfFile: passwordFile, encoding: .utf8) else {
                throw StoreError(.invalidConfiguration, "cannot read the database password file \(passwordFile)")
            }
            password = text.trimmingCharacters(in: .newlines)
        }
    }

    /// The postgres-nio client configuration.
    var clientConfiguration: PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch tlsConfiguration {
        case nil: tls = .disable
        case (let configuration, true)?: tls = .require(configuration)
        case (let configuration, false)?: tls = .prefer(configuration)
        }
        var configuration = PostgresClient.Configuration(host: host, port: port, username: username, password: password,
                                                         database: database, tls: tls)
        configuration.options.maximumConnections = poolSize
        configuration.options.connectTimeout = .seconds(2)
        configuration.options.keepAliveBehavior = .init(frequency: .seconds(10))
        return configuration
    }

    /// A single connection's configuration (the leader lock holds one of its own).
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS
        switch tlsConfiguration {
        case nil: tls = .disable
        case (let configuration, true)?: tls = .require(try NIOSSLContext(configuration: configuration))
        case (let configuration, false)?: tls = .prefer(try NIOSSLContext(configuration: configuration))
        }
        var configuration = PostgresConnection.Configuration(host: host, port: port, username: username, password: password,
                                                             database: database, tls: tls)
        configuration.options.connectTimeout = .seconds(2)
        return configuration
    }

    /// TLS as `sslmode` and `sslrootcert` ask, with libpq's meanings: nil (disable), or the client configuration and
    /// whether TLS is required.
    private var tlsConfiguration: (TLSConfiguration, required: Bool)? {
        guard sslMode != "disable" else { return nil }
        var configuration = TLSConfiguration.makeClientConfiguration()
        let verify = sslMode == "verify-full" ? "full" : sslMode == "verify-ca" || (sslMode == "require" && sslRootCert != nil) ? "ca" : "none"
        switch verify {
        case "full": configuration.certificateVerification = .fullVerification
        case "ca": configuration.certificateVerification = .noHostnameVerification
        default: configuration.certificateVerification = .none
        }
        if let sslRootCert, sslRootCert != "system" { configuration.trustRoots = .file(sslRootCert) }
        return (configuration, sslMode != "allow" && sslMode != "prefer")
    }

    /// The TLS part of the settings as a log or an error shows it.
    public var tlsDescription: String { "sslmode=\(sslMode)" + (sslRootCert.map { " sslrootcert=\($0)" } ?? "") }

    /// The URL without its password, for logs.
    public var redacted: String { "postgres://\(username)@\(host):\(port)/\(database)" }
}
