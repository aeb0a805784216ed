import Foundation
import LookupEngine
import NIOSSL
import PostgresNIO

/// Where the shared PostgreSQL store is and how to use it, from `postgres://user[:password]@host[:port]/database`
/// (`?sslmode=disable|prefer|require`, default `prefer`), a pool size and an optional password file, which keeps
/// the password out of the config file.
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
    /// `disable`, `prefer` or `require`.
    public var sslMode: String
    /// Connections kept at most per process.
    public var poolSize: Int
    /// Deadline of one store operation, connection wait included.
    public var operationTimeout: Duration = .seconds(3)

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
        let sslMode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer"
        guard ["disable", "prefer", "require"].contains(sslMode) else {
            throw StoreError(.invalidConfiguration, "sslmode must be disable, prefer or require")
        }
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

    /// TLS as `sslmode` asks: nil (disable), or the client configuration and whether it is required.
    private var tlsConfiguration: (TLSConfiguration, required: Bool)? {
        sslMode == "disable" ? nil : (.makeClientConfiguration(), sslMode == "require")
    }

    /// The URL without its password, for logs.
    public var redacted: String { "postgres://\(username)@\(host):\(port)/\(database)" }
}
