import Crypto
import Foundation
import Logging
import LookupEngine
import LookupService
import LookupStorage
import Testing

/// The store implementations the store tests run the same bodies against: SQLite (embedded) and PostgreSQL
/// (shared, a real server from `TestPostgres`).
public enum StoreBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    public var testDescription: String { rawValue }

    /// One backing database; `open…` may be called several times for several handles on it (a reopen, or
    /// a second coordinator).
    public func database() async throws -> StoreDatabase {
        switch self {
        case .sqlite: return .sqlite(directory: try temporaryDirectory())
        case .postgres:
            return .postgres(settings: try await TestPostgres.freshDatabase(), sealing: StoreSealing(keyEncryptionKey: SymmetricKey(size: .bits256)))
        }
    }
}

/// One backing database of a `StoreBackend`.
public enum StoreDatabase: Sendable {
    case sqlite(directory: String)
    case postgres(settings: PostgresSettings, sealing: StoreSealing)

    /// A new evaluation-key store handle on this database.
    public func openKeyStore(maxAge: TimeInterval = 30 * 24 * 3600, maxBytes: Int = 32 << 30, batchSize: Int = 1000,
                             clock: @escaping @Sendable () -> Date = { Date() }) async throws -> any EvaluationKeyStore {
        switch self {
        case .sqlite(let directory):
            return try SQLiteEvaluationKeyStore(path: directory + "/keys.sqlite", maxAge: maxAge, maxBytes: maxBytes, clock: clock)
        case .postgres(let settings, let sealing):
            let store = try await PostgresStore.connect(settings, sealing: sealing, logger: Logger(label: "callveil.test.store"))
            return PostgresEvaluationKeyStore(store: store, maxAge: maxAge, maxBytes: maxBytes, batchSize: batchSize, clock: clock)
        }
    }

    /// A new nonce store handle on this database.
    public func openNonceStore(maxPerKey: Int = 100_000_000) async throws -> any NonceStore {
        switch self {
        case .sqlite(let directory):
            return try SQLiteNonceStore(path: directory + "/nonces.sqlite", maxPerKey: maxPerKey)
        case .postgres(let settings, let sealing):
            let store = try await PostgresStore.connect(settings, sealing: sealing, logger: Logger(label: "callveil.test.store"))
            return PostgresNonceStore(store: store, maxPerKey: maxPerKey)
        }
    }
}
