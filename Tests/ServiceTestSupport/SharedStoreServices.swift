import Foundation
import LookupService
import LookupStorage
import PostgresNIO

/// A dataset and `count` service configs, each in a directory of its own (its own SQLite files and issuer-key
/// directory, unused when the store is shared), naming one fresh PostgreSQL database and one key-encryption key:
/// the setting of several coordinators behind a load balancer.
public func sharedStoreServices(count: Int, privacyPass: Bool = true, records: Int = 40, identityShards: Int = 2, keyMaxAge: Int? = nil)
    async throws -> (configs: [String], data: DemoDataset, database: PostgresSettings) {
    let directory = try temporaryDirectory()
    let data = try DemoDataset.make(in: directory, count: records, identityShards: identityShards)
    let database = try await TestPostgres.freshDatabase()
    try Data((database.password ?? "").utf8).write(to: URL(fileURLWithPath: directory + "/db.password"))
    try StoreSealing.generate(path: directory + "/store.kek")
    var configs: [String] = []
    for index in 0..<count {
        let own = directory + "/service-\(index)"
        try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
        configs.append(try writeServiceConfig(in: own, usecases: data.useCases, keyMaxAge: keyMaxAge,
                                                 privacyPass: privacyPass) { config in
            config.database = .init(url: "postgres://\(database.username)@\(database.host):\(database.port)/\(database.database)?sslmode=disable",
                                    passwordFile: directory + "/db.password", keyEncryptionKeyFile: directory + "/store.kek",
                                    operationTimeoutSeconds: 2)
        })
    }
    return (configs, data, database)
}
