import Foundation
import LookupCoordinator
import LookupEngine
import ServiceCore
import ServiceTestSupport
import Testing
import ZeroMQ

/// Configuration files: the examples shipped under `cluster/` load, and a key no setting has is an error naming it.
@Suite("Config files")
struct ConfigFileTests {
    static var clusterDirectory: URL { OHTTPInteropClient.packageRoot.appendingPathComponent("cluster") }

    @Test("Every example config under cluster/ loads (no unknown keys)")
    func examplesLoad() throws {
        let files = try FileManager.default.subpathsOfDirectory(atPath: Self.clusterDirectory.path)
        var loaded = 0
        // The monitoring kit's files (Prometheus rules and a Grafana dashboard) are not CallVeil configs.
        for file in files.sorted() where !file.hasPrefix("monitoring/") {
            let path = Self.clusterDirectory.appendingPathComponent(file).path
            if file.hasSuffix(".yaml") {
                _ = try ClusterConfig.load(path: path)
                loaded += 1
            } else if file.hasSuffix(".json") {
                _ = try ServiceConfig.load(path: path)
                loaded += 1
            }
        }
        #expect(loaded >= 5, "example configs found: \(loaded)")
    }

    @Test("A misspelt key in a service config is an error naming its path, at any depth")
    func unknownServiceKeys() throws {
        let directory = try temporaryDirectory()
        let path = "\(directory)/service-config.json"
        func load(_ json: String) -> String? {
            do {
                try Data(json.utf8).write(to: URL(fileURLWithPath: path))
                _ = try ServiceConfig.load(path: path)
                return nil
            } catch { return "\(error)" }
        }
        let valid = #"{"users": [{"tier": "tier1", "tokens": ["AAAA"]}], "usecases": [{"name": "a", "fileStem": "a/shard"}], "http": {"adminPort": 9191}}"#
        #expect(load(valid) == nil)
        let nested = load(#"{"users": [], "usecases": [], "http": {"adminport": 9191}}"#)
        #expect(nested?.contains("unknown key http.adminport") == true, "\(nested ?? "loaded")")
        let top = load(#"{"users": [], "usecases": [], "keyz": {"cacheMegabytes": 64}}"#)
        #expect(top?.contains("keyz") == true, "\(top ?? "loaded")")
        let inArray = load(#"{"users": [], "usecases": [{"name": "a", "fileStem": "a/shard", "versionCnt": 3}]}"#)
        #expect(inArray?.contains("usecases[0].versionCnt") == true, "\(inArray ?? "loaded")")
        // The reference's own file (its unused issuerRequestUri included) and null values stay accepted.
        #expect(load(#"{"issuerRequestUri": "https://x", "users": [], "usecases": [], "gateway": null}"#) == nil)
        // The database given as a URL string or as an object.
        #expect(load(#"{"users": [], "usecases": [], "database": "postgres://u@h/db"}"#) == nil)
        let database = load(#"{"users": [], "usecases": [], "database": {"url": "postgres://u@h/db", "pool": 4}}"#)
        #expect(database?.contains("database.pool") == true, "\(database ?? "loaded")")
    }

    @Test("A misspelt key in a cluster config is an error naming it")
    func unknownClusterKeys() throws {
        let directory = try temporaryDirectory()
        let path = "\(directory)/cluster.yaml"
        let base = "service: service-config.json\nbind: inproc://x\n"
        try Data((base + "heartbeatTimeoutSeconds: 3\n").utf8).write(to: URL(fileURLWithPath: path))
        _ = try ClusterConfig.load(path: path)
        try Data((base + "heartbeatTimeout: 3\nworkers:\n  - id: w1\n    publicKey: abc\n    role: spare\n").utf8).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: ConfigError.self) { try ClusterConfig.load(path: path) }
        #expect(error?.description.contains("unknown keys heartbeatTimeout, workers[0].role") == true, "\(String(describing: error))")
    }

    @Test("State goes to stateDirectory (created, mode 0700), inputs stay relative to the config file")
    func stateDirectory() throws {
        let directory = try temporaryDirectory()
        let path = "\(directory)/service-config.json"
        try Data(#"{"users": [], "usecases": [{"name": "a", "fileStem": "data/shard"}], "stateDirectory": "state", "gateway": {}, "reports": {}}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        let config = try ServiceConfig.load(path: path)
        #expect(config.stateDirectory == "\(directory)/state")
        #expect(config.keys?.database == "\(directory)/state/keys.sqlite")
        #expect(config.privacyPass?.nonceDatabase == "\(directory)/state/nonces.sqlite" && config.privacyPass?.keyDirectory == "\(directory)/state/issuer-keys")
        #expect(config.gateway?.keyDirectory == "\(directory)/state/gateway-keys")
        #expect(config.reports?.database == "\(directory)/state/reports.sqlite" && config.reports?.reporterKeyFile == "\(directory)/state/reporter.key")
        #expect(config.usecases[0].fileStem == "\(directory)/data/shard", "inputs resolve against the config file")
        #expect(try FileManager.default.attributesOfItem(atPath: "\(directory)/state")[.posixPermissions] as? Int == 0o700)
    }

    @Test("User tokens iOS would not send (not base64) are found, by tier and position")
    func userTokensNotBase64() {
        let config = ServiceConfig(users: [.init(tier: "tier1", tokens: ["AAAA", "not base64!", "QUJD"]), .init(tier: "tier2", tokens: ["", "QUJDRA=="])],
                                   usecases: [])
        #expect(config.userTokensNotBase64.map { "\($0.tier)#\($0.position)" } == ["tier1#1", "tier2#0"])
    }

    @Test("A CURVE key file is not overwritten unless asked, and is replaced whole when it is")
    func keyFileOverwrite() throws {
        let path = try temporaryDirectory() + "/worker.key"
        let first = try CurveKeyPair.generate()
        try CurveKeyFile.write(first, to: path)
        let error = #expect(throws: ConfigError.self) { try CurveKeyFile.write(try CurveKeyPair.generate(), to: path) }
        #expect(error?.description.contains("--force") == true)
        #expect(try CurveKeyFile.read(path).publicKey == first.publicKey, "the refused write left the file as it was")
        let second = try CurveKeyPair.generate()
        try CurveKeyFile.write(second, to: path, replace: true)
        #expect(try CurveKeyFile.read(path).publicKey == second.publicKey)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
    }
}
