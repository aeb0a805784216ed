import Dataset
import Foundation
import Logging
import LookupProtocol
import LookupService
import PIR
import ServiceCore

/// A real `LookupServer` over a small processed block list, built once per harness process in a temporary
/// directory. The dataset and its processing are deterministic, so the config ids and key-config hashes in the
/// committed seeds match every run; the issuer keys come from `fuzz/fixture/issuer-keys` (test-only keys with a
/// century of validity), so recorded tokens name a key the fixture knows.
public enum Fixture {
    /// The use case the fixture serves.
    public static let useCase = "net.example.fuzz.block"
    /// The user token of its only tier.
    public static let userToken = "FUZZ"

    /// The numbers in the block list, with whether each is blocked.
    public static let records: [IdentityRecord] = (0..<40).map { i in
        IdentityRecord(number: "+1555" + String(format: "%07d", 1_000_000 + i * 7919), name: "", category: .unspecified,
                       block: i % 3 == 0, cacheExpiryMinutes: 0)
    }

    /// The directory holding this process's fixture.
    public static let directory: String = {
        let path = NSTemporaryDirectory() + "callveil-fuzz-\(getpid())"
        try? FileManager.default.removeItem(atPath: path)
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "callveil-fuzz-\(getpid())") }
        return path
    }()

    /// The committed fixture folder (`fuzz/fixture`), or `$CALLVEIL_FUZZ_FIXTURE`.
    public static let committed: String = ProcessInfo.processInfo.environment["CALLVEIL_FUZZ_FIXTURE"]
        ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("fixture").path

    /// The shard files' stem.
    public static var fileStem: String { "\(directory)/block/shard" }

    /// The service config the server was started from.
    public static var configPath: String { "\(directory)/service-config.json" }

    /// The fixture's service config, written once with its dataset and issuer keys; returns its path.
    public static let prepared: String = {
        do {
            let (block, _) = try IdentityDataset.keywordDatabases(records)
            var options = ProcessingOptions(encryption: .init(.n_4096_logq_27_28_28_logt_5), shardCount: 2, sharding: .sha256)
            options.bucketCount = .fixedSize(bucketCount: 64)
            try DatabaseProcessingJob(options: options, outputStem: fileStem)
                .run(rows: block.rows.map { ([UInt8]($0.keyword), [UInt8]($0.value)) })
            let keys = "\(directory)/issuer-keys"
            let saved = "\(committed)/issuer-keys"
            if FileManager.default.fileExists(atPath: "\(saved)/keys.json") {
                try FileManager.default.copyItem(atPath: saved, toPath: keys)
            } else {  // the first seed recording: make the keys and keep them for every later run
                let ring = try IssuerKeyRing(directory: keys, lifetime: keyLifetime)
                try ring.ensure(tiers: ["tier1"])
                try FileManager.default.createDirectory(atPath: committed, withIntermediateDirectories: true)
                try FileManager.default.copyItem(atPath: keys, toPath: saved)
            }
            var config = ServiceConfig(users: [.init(tier: "tier1", tokens: [userToken])],
                                       usecases: [.init(name: useCase, fileStem: fileStem)],
                                       keys: .init(database: "\(directory)/keys.sqlite"),
                                       privacyPass: .init(keyDirectory: keys, nonceDatabase: "\(directory)/nonces.sqlite",
                                                          keyLifetimeSeconds: Int(keyLifetime)),
                                       computeThreads: 1, concurrentQueries: 1)
            config.http = .init(adminPort: 0)
            try JSONEncoder().encode(config).write(to: URL(fileURLWithPath: configPath))
            return configPath
        } catch {
            fatalError("the fuzz fixture could not be built: \(error)")
        }
    }()

    /// The issuer keys' validity: a century, so the committed keys never expire.
    static let keyLifetime: TimeInterval = 100 * 365 * 86400

    /// A quiet logger for fixture services.
    public static var logger: Logger {
        var logger = Logger(label: "callveil-fuzz")
        logger.logLevel = .critical
        return logger
    }

    /// The User-Identifier whose key the committed seeds were built with.
    public static let user = "fuzz-device"

    /// The server (no listener: harnesses call its API directly; `SeedRecorder` starts one to record exchanges).
    public static let server: LookupServer = {
        let path = prepared
        do { return try blocking { try await LookupServer(configPath: path, logger: logger) }.get() } catch {
            fatalError("the fuzz fixture could not start: \(error)")
        }
    }()
}
