import Crypto
import Foundation
import Logging
import LookupService
import LookupStorage
import PostgresNIO
#if canImport(Glibc)
import Glibc
#endif

/// A real PostgreSQL server for the store tests (Debian's package, which `make deps` installs): started once per
/// test process in a temporary directory on a free loopback port, with password (SCRAM) authentication, and
/// stopped by a watchdog shell when the test process exits, however it exits. Each test gets a database of its
/// own. `CALLVEIL_TEST_POSTGRES` (a superuser URL without a database, e.g. `postgres://me:pw@127.0.0.1:5432`)
/// uses a running server instead.
public enum TestPostgres {
    /// Settings for a fresh, empty database (no schema until a store connects).
    public static func freshDatabase(poolSize: Int = 4) async throws -> PostgresSettings {
        let server = try await TestPostgresServer.shared.start()
        let name = "callveil_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var settings = try PostgresSettings(url: "postgres://\(server.user)@\(server.host):\(server.port)/\(name)?sslmode=disable",
                                            poolSize: poolSize)
        settings.password = server.password
        try await withConnection(to: settings, database: "postgres") { admin in
            try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        }
        return settings
    }

    /// Runs `body` on a connection of its own to `settings`' server (its database, or `database`), closed
    /// whatever happens (an unclosed connection is a failed assertion in postgres-nio's debug builds).
    @discardableResult
    public static func withConnection<T>(to settings: PostgresSettings, database: String? = nil,
                                         _ body: (PostgresConnection) async throws -> T) async throws -> T {
        let connection = try await PostgresConnection.connect(
            configuration: .init(host: settings.host, port: settings.port, username: settings.username, password: settings.password,
                                 database: database ?? settings.database, tls: .disable),
            id: 1, logger: logger)
        do {
            let value = try await body(connection)
            try await connection.close()
            return value
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// The CA (a self-signed certificate naming `localhost` only, not 127.0.0.1) of the test server's TLS; nil for a
    /// server given by `CALLVEIL_TEST_POSTGRES`.
    public static func certificate() async throws -> String? {
        try await TestPostgresServer.shared.start().certificate
    }

    /// The tests' PostgreSQL logger.
    public static let logger = Logger(label: "callveil.test.postgres")

    /// A store connected to a fresh database, with a fresh key-encryption key.
    public static func store(poolSize: Int = 4) async throws -> PostgresStore {
        try await PostgresStore.connect(try await freshDatabase(poolSize: poolSize),
                                        sealing: StoreSealing(keyEncryptionKey: SymmetricKey(size: .bits256)),
                                        logger: Logger(label: "callveil.test.postgres"))
    }
}

/// Where the test server listens and how to log in.
struct TestPostgresEndpoint: Sendable {
    let host: String
    let port: Int
    let user: String
    let password: String
    /// The server's self-signed certificate when it serves TLS.
    var certificate: String? = nil
}

/// Starts the test server once.
actor TestPostgresServer {
    static let shared = TestPostgresServer()
    private var launching: Task<TestPostgresEndpoint, any Error>?

    /// The one server of this process: callers that arrive while it starts wait for the same start.
    func start() async throws -> TestPostgresEndpoint {
        if let launching { return try await launching.value }
        let task = Task { try await Self.launch() }
        launching = task
        return try await task.value
    }

    private static func launch() async throws -> TestPostgresEndpoint {
        if let url = ProcessInfo.processInfo.environment["CALLVEIL_TEST_POSTGRES"], let components = URLComponents(string: url),
           let host = components.host, let user = components.user {
            return TestPostgresEndpoint(host: host, port: components.port ?? 5432, user: user, password: components.password ?? "")
        }
        let bin = try binaries()
        let directory = "/tmp/callveil-pg-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let password = UUID().uuidString
        try Data((password + "\n").utf8).write(to: URL(fileURLWithPath: directory + "/pw"))
        // PostgreSQL refuses to run as root: as root, the server runs as Debian's `postgres` user.
        let asUser: [String] = getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []
        // TLS with a self-signed certificate naming localhost only (Debian's default is self-signed too): the
        // sslmode tests connect to 127.0.0.1, which verify-full must refuse and verify-ca accept.
        try await run(["/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                       "-keyout", "\(directory)/server.key", "-out", "\(directory)/server.crt", "-days", "2", "-subj", "/CN=localhost",
                       "-addext", "subjectAltName=DNS:localhost"])
        chmod("\(directory)/server.key", 0o600)
        chmod("\(directory)/server.crt", 0o644)
        if getuid() == 0 { try await run(["/bin/chown", "-R", "postgres", directory]) }
        try await run(asUser + ["\(bin)/initdb", "-D", "\(directory)/data", "-U", "callveil", "--auth=scram-sha-256",
                          "--pwfile=\(directory)/pw", "-E", "UTF8", "--no-sync"])
        let port = try freePort()
        // The watchdog: runs the server until this process (its parent) has exited (the shell is then re-parented;
        // a zombie parent still answers kill -0), then stops it and removes the directory. It holds none of this
        // process's pipes, so a test runner waiting for their end is not held up. Durability settings are off:
        // the tests need behaviour, not crash safety.
        let watchdog = """
            \(asUser.joined(separator: " ")) \(bin)/postgres -D \(directory)/data -p \(port) -k \(directory) \
              -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
              -c max_connections=400 -c ssl=on -c ssl_cert_file=\(directory)/server.crt -c ssl_key_file=\(directory)/server.key \
              > \(directory)/log 2>&1 &
            while [ "$(cut -d' ' -f4 /proc/$$/stat)" = "\(getpid())" ]; do sleep 0.5; done
            kill -INT "$(head -1 \(directory)/data/postmaster.pid)" 2>/dev/null
            sleep 2; rm -rf \(directory)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", watchdog]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let endpoint = TestPostgresEndpoint(host: "127.0.0.1", port: port, user: "callveil", password: password,
                                            certificate: "\(directory)/server.crt")
        for _ in 0..<150 {
            if let connection = try? await PostgresConnection.connect(
                configuration: .init(host: endpoint.host, port: endpoint.port, username: endpoint.user,
                                     password: endpoint.password, database: "postgres", tls: .disable),
                id: 0, logger: Logger(label: "callveil.test.postgres")) {
                try? await connection.close()
                return endpoint
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        let log = (try? String(contentsOfFile: "\(directory)/log", encoding: .utf8)) ?? ""
        throw TestPostgresError("PostgreSQL did not start within 30 s: \(log.suffix(2000))")
    }

    /// The server binaries: `CALLVEIL_PG_BIN`, else the newest /usr/lib/postgresql/<version>/bin.
    private static func binaries() throws -> String {
        if let bin = ProcessInfo.processInfo.environment["CALLVEIL_PG_BIN"] { return bin }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted()
        guard let newest = versions.last, FileManager.default.fileExists(atPath: "\(root)/\(newest)/bin/postgres") else {
            throw TestPostgresError("no PostgreSQL server under \(root) (make deps installs Debian's postgresql)")
        }
        return "\(root)/\(newest)/bin"
    }

    private static func run(_ arguments: [String]) async throws {
        let (text, status) = try await runChildProcess(arguments[0], Array(arguments.dropFirst()))
        guard status == 0 else {
            throw TestPostgresError("\(arguments.joined(separator: " ")) failed: \(String(decoding: text, as: UTF8.self).suffix(2000))")
        }
    }

    /// A loopback port no one listens on now (the kernel's pick for a socket bound to port 0).
    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestPostgresError("socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw TestPostgresError("bind() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// The test server could not be started.
struct TestPostgresError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
