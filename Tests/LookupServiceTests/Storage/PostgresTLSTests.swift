import Crypto
import Foundation
import Logging
import LookupStorage
import PostgresNIO
import ServiceTestSupport
import Testing

/// The store's `sslmode` against a server with a self-signed certificate (as Debian's default is): libpq's meanings,
/// and a failure that ends the connect with its reason within the deadline.
@Suite("PostgreSQL TLS (sslmode)")
struct PostgresTLSTests {
    /// Connects a store with `parameters` (and the test server's database and password) and says whether its session
    /// is encrypted; the error when it cannot connect.
    static func connect(_ parameters: String, host: String = "127.0.0.1") async throws -> Result<Bool, StoreError> {
        let base = try await TestPostgres.freshDatabase()
        var settings: PostgresSettings
        do {
            settings = try PostgresSettings(url: "postgres://\(base.username)@\(host):\(base.port)/\(base.database)?\(parameters)", poolSize: 2)
        } catch let error as StoreError { return .failure(error) }
        settings.password = base.password
        let store: PostgresStore
        do {
            store = try await PostgresStore.connect(settings, sealing: StoreSealing(keyEncryptionKey: SymmetricKey(size: .bits256)),
                                                    logger: TestPostgres.logger)
        } catch let error as StoreError { return .failure(error) }
        defer { Task { await store.shutdown() } }
        let encrypted = try await store.run("ssl") { client in
            var encrypted = false
            for try await (ssl) in try await client.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                                                          logger: TestPostgres.logger).decode(Bool.self) { encrypted = ssl }
            return encrypted
        }
        return .success(encrypted)
    }

    @Test("disable, allow, prefer (the default) and require connect to a self-signed server without checking it; verify-ca and verify-full check it against sslrootcert")
    func modes() async throws {
        let ca = try #require(try await TestPostgres.certificate(), "the test server has no TLS (CALLVEIL_TEST_POSTGRES)")
        #expect(try await Self.connect("sslmode=disable").get() == false)
        #expect(try await Self.connect("").get() == true, "the default (prefer) encrypts, and accepts a self-signed certificate as libpq does")
        #expect(try await Self.connect("sslmode=allow").get() == true)
        #expect(try await Self.connect("sslmode=require").get() == true)
        #expect(try await Self.connect("sslmode=verify-ca&sslrootcert=\(ca)").get() == true)
        #expect(try await Self.connect("sslmode=require&sslrootcert=\(ca)").get() == true, "require with a CA file checks the chain, as verify-ca")
        #expect(try await Self.connect("sslmode=verify-full&sslrootcert=\(ca)", host: "localhost").get() == true)
    }

    @Test("A certificate that does not verify, or does not name the host, ends the connect with that reason within the deadline; a verify mode without a CA is a config error")
    func refusals() async throws {
        let ca = try #require(try await TestPostgres.certificate(), "the test server has no TLS (CALLVEIL_TEST_POSTGRES)")
        let start = ContinuousClock.now
        // The certificate names localhost only: by address, verify-full refuses it.
        guard case .failure(let wrongHost) = try await Self.connect("sslmode=verify-full&sslrootcert=\(ca)") else {
            Issue.record("verify-full accepted a certificate that does not name 127.0.0.1")
            return
        }
        #expect(wrongHost.code == .unavailable && wrongHost.reason.contains("does not name this host"), "\(wrongHost)")
        // Checked against the system's roots, a self-signed certificate does not verify.
        guard case .failure(let untrusted) = try await Self.connect("sslmode=verify-ca&sslrootcert=system") else {
            Issue.record("verify-ca accepted a self-signed certificate against the system's roots")
            return
        }
        #expect(untrusted.reason.contains("does not verify"), "\(untrusted)")
        #expect(ContinuousClock.now - start < .seconds(15), "both refusals took \(ContinuousClock.now - start)")
        guard case .failure(let noCA) = try await Self.connect("sslmode=verify-full") else {
            Issue.record("verify-full without sslrootcert was accepted")
            return
        }
        #expect(noCA.code == .invalidConfiguration && noCA.reason.contains("sslrootcert"), "\(noCA)")
        guard case .failure(let unknown) = try await Self.connect("sslmode=verify") else { Issue.record("sslmode=verify accepted"); return }
        #expect(unknown.code == .invalidConfiguration)
    }
}
