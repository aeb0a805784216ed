import Foundation
import Logging
import LookupEngine
import NIOCore
import PostgresNIO

/// The shared store of a multi-coordinator deployment: a PostgreSQL connection pool, its schema migrated on
/// connect, and the sealing of secrets at rest. The evaluation-key, nonce and coordination stores are views of
/// it. Every operation has a deadline, and losing the database surfaces as `StoreError.unavailable` (a 503 with
/// `Retry-After`), never as a hang.
public final class PostgresStore: Sendable {
    /// The connection pool.
    package let client: PostgresClient
    /// Sealing of evaluation keys and issuer keys, and hashing of user identifiers.
    public let sealing: StoreSealing
    /// Longest one store operation may take, connection wait included.
    public let operationTimeout: Duration
    /// Longest the migrations at connect may take: a migration can rebuild an index over a large table, and a
    /// process that is still starting (its threads busy loading shards) answers late; neither is an outage.
    public static let migrationTimeout: Duration = .seconds(120)
    package let logger: Logger
    /// Where the store is (for connections of their own, as the leader lock's).
    public let settings: PostgresSettings
    private let runner: Task<Void, Never>

    /// Connects to `settings.url`, checks the connection and applies pending migrations.
    public static func connect(_ settings: PostgresSettings, sealing: StoreSealing, logger: Logger) async throws -> PostgresStore {
        try await probe(settings, logger: logger)
        let store = PostgresStore(settings: settings, sealing: sealing, logger: logger)
        do {
            _ = try await store.transaction("migrations", timeout: migrationTimeout) { connection in
                try await PostgresMigrations.apply(connection: connection, logger: logger)
            }
        } catch {
            await store.shutdown()
            throw error
        }
        return store
    }

    /// Makes one connection first, so that a server that cannot be reached, a refused login or a certificate that
    /// does not verify ends the start (or a command) within the operation deadline with the reason, instead of the
    /// pool retrying in the background until the migrations' deadline.
    static func probe(_ settings: PostgresSettings, logger: Logger) async throws {
        let configuration: PostgresConnection.Configuration
        do { configuration = try settings.connectionConfiguration() } catch {
            throw StoreError(.invalidConfiguration, "cannot set up TLS for \(settings.redacted) (\(settings.tlsDescription)): \(error)")
        }
        let deadline = max(settings.operationTimeout, .seconds(5))
        do {
            try await Deadline.run(deadline, expired: {
                StoreError(.unavailable, "cannot connect to \(settings.redacted) (\(settings.tlsDescription)): no answer within \(deadline)")
            }, discard: { _ in }) {
                let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
                try? await connection.close()
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.unavailable, "cannot connect to \(settings.redacted) (\(settings.tlsDescription)): \(Self.reason(error))")
        }
    }

    /// A connection failure as an operator can act on it (postgres-nio's own description hides the cause).
    static func reason(_ error: any Error) -> String {
        let text = String(reflecting: error)
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            return "the server's certificate does not verify against sslrootcert (sslmode=require encrypts without verifying; verify-ca and verify-full need the CA that signed it)"
        }
        if text.contains("hostname") || text.contains("Hostname") {
            return "the server's certificate does not name this host (verify-full); connect by a name it has, or use verify-ca"
        }
        if text.contains("sslUnsupported") || text.contains("SSL") && text.contains("unsupported") {
            return "the server does not offer TLS (ssl = off), and sslmode asks for it"
        }
        if let psql = error as? PSQLError, let message = psql.serverInfo?[.message] { return message }
        return text.count > 400 ? String(text.prefix(400)) + "…" : text
    }

    private init(settings: PostgresSettings, sealing: StoreSealing, logger: Logger) {
        var logger = logger
        logger[metadataKey: "component"] = "postgres"
        client = PostgresClient(configuration: settings.clientConfiguration, backgroundLogger: logger)
        let client = self.client
        runner = Task { await client.run() }
        self.sealing = sealing
        self.settings = settings
        self.operationTimeout = settings.operationTimeout
        self.logger = logger
    }

    /// Closes the pool.
    public func shutdown() async {
        runner.cancel()
        await runner.value
    }

    /// Runs `body` with the pool under the operation deadline (or `timeout`), mapping connection failures to
    /// `StoreError.unavailable` and server errors to their SQLSTATE; a transaction's error is the one its body
    /// threw (a typed `StoreError`, `NonceStoreFull`…), or the failed BEGIN/COMMIT's.
    @discardableResult
    package func run<T: Sendable>(_ what: String, timeout: Duration? = nil,
                                  _ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws -> T {
        let client = self.client
        return try await Self.withDeadline(timeout ?? operationTimeout, what) { try await body(client) }
    }

    /// Runs `body` within `timeout`, with the error mapping of `run`. The deadline holds even while a query waits
    /// for a server that stopped answering (queries ignore cancellation): see `Deadline`.
    package static func withDeadline<T: Sendable>(_ timeout: Duration, _ what: String,
                                                  discard: @escaping @Sendable (T) async -> Void = { _ in },
                                                  _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        do {
            return try await Deadline.run(timeout, expired: { StoreError(.unavailable, "\(what): no answer from PostgreSQL within \(timeout)") },
                                          discard: discard, body)
        } catch let error as PostgresTransactionError {
            let cause = error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError
            if let psql = cause as? PSQLError { throw Self.storeError(psql, what: what) }
            throw cause ?? StoreError(.unavailable, "\(what): the transaction failed")
        } catch let error as PSQLError {
            throw Self.storeError(error, what: what)
        }
    }

    /// Runs `body` in one transaction (see `run`).
    package func transaction<T: Sendable>(_ what: String, timeout: Duration? = nil,
                                          _ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await run(what, timeout: timeout) { client in
            try await client.withTransaction(logger: logger) { connection in try await body(connection) }
        }
    }

    /// Connection-level failures (and server states that mean "not now") are `unavailable`; other server errors
    /// keep their SQLSTATE for the operator, never the statement's values.
    static func storeError(_ error: PSQLError, what: String) -> StoreError {
        guard let state = error.serverInfo?[.sqlState] else {
            return StoreError(.unavailable, "\(what): PostgreSQL connection failed (\(error.code))")
        }
        // 08: connection exception, 53: insufficient resources, 57P0x: shutting down, 40001/40P01: retry.
        if state.hasPrefix("08") || state.hasPrefix("53") || state.hasPrefix("57P") || state == "40001" || state == "40P01" {
            return StoreError(.unavailable, "\(what): PostgreSQL is not available now (SQLSTATE \(state))", sqlState: state)
        }
        return StoreError(.schema, "\(what): PostgreSQL refused a statement (SQLSTATE \(state))", sqlState: state)
    }
}
