import Foundation
import LookupEngine
import LookupWorker
import Yams
import ZeroMQ

/// The coordinator's deployment file (`callveil coordinator --config cluster.yaml`): the service config it
/// serves, where it listens for HTTP and for workers, replication, timeouts, and the CURVE keys (its own pair
/// and the public keys of the workers it admits). Relative paths are resolved against the file's directory.
public struct ClusterConfig: Codable, Sendable {
    /// A worker the coordinator admits.
    public struct Worker: Codable, Sendable {
        /// Name, for logs.
        public var id: String
        /// The worker's CURVE public key (Z85).
        public var publicKey: String
    }

    /// Path of the service config (users, use cases, keys, Privacy Pass).
    public var service: String
    /// This coordinator's name among coordinators sharing a store (default: host name and HTTP port).
    public var name: String?
    /// HTTP address.
    public var host: String?
    /// HTTP port.
    public var port: Int?
    /// ZeroMQ endpoint for workers, e.g. `tcp://0.0.0.0:5555`.
    public var bind: String
    /// Copies of each shard (default 2).
    public var replication: Int?
    /// Seconds without a heartbeat before a worker is dead (default 3).
    public var heartbeatTimeoutSeconds: Double?
    /// Seconds a worker has to answer a query (default 10).
    public var requestTimeoutSeconds: Double?
    /// File with the coordinator's CURVE key pair (from `callveil keygen`); required when `bind` is TCP.
    public var keyFile: String?
    /// Workers admitted (by CURVE public key).
    public var workers: [Worker]?

    /// Reads a YAML (or JSON) cluster config.
    public static func load(path: String) throws -> ClusterConfig {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch { throw ConfigError("cannot read \(path): \(error)") }
        var config: ClusterConfig
        do { config = try YAMLDecoder().decode(ClusterConfig.self, from: text) } catch { throw ConfigError("\(path): \(error)") }
        if let tree = try? Yams.load(yaml: text), let error = ConfigKeys.error(try ConfigKeys.unknown(in: tree, decoded: config), in: path) {
            throw error
        }
        let base = URL(fileURLWithPath: path).deletingLastPathComponent().path
        func resolve(_ p: String) -> String { p.hasPrefix("/") ? p : base + "/" + p }
        config.service = resolve(config.service)
        config.keyFile = config.keyFile.map(resolve)
        if config.bind.hasPrefix("tcp://"), config.keyFile == nil {
            throw ConfigError("\(path): a TCP bind needs keyFile (CURVE) so traffic between hosts is encrypted and workers authenticated")
        }
        return config
    }

    /// The admitted workers: CURVE public key → worker id (checked: well-formed keys, unique ids and keys).
    public func allowList() throws -> [String: String] {
        var map: [String: String] = [:]
        for worker in workers ?? [] {
            guard CurveKeyPair.isZ85Key(worker.publicKey) else { throw ConfigError("worker \(worker.id): publicKey is not a Z85 CURVE key") }
            guard ClusterLimits.isValidWorkerID(worker.id) else { throw ConfigError("worker id '\(worker.id)' is empty, too long or has spaces") }
            guard map[worker.publicKey] == nil else { throw ConfigError("worker \(worker.id): its key is listed twice") }
            map[worker.publicKey] = worker.id
        }
        guard Set(map.values).count == map.count else { throw ConfigError("a worker id is listed twice") }
        return map
    }

    /// The coordinator's options; `path` is re-read for the allow-list on every reload (SIGHUP).
    public func coordinatorOptions(path: String? = nil) throws -> ClusterCoordinator.Options {
        var options = ClusterCoordinator.Options(bind: bind)
        options.replication = replication ?? 2
        options.heartbeatTimeout = .milliseconds(Int((heartbeatTimeoutSeconds ?? 3) * 1000))
        options.requestTimeout = .milliseconds(Int((requestTimeoutSeconds ?? 10) * 1000))
        if let keyFile {
            options.curve = (try CurveKeyFile.read(keyFile), try allowList())
            if let path { options.allowList = { try ClusterConfig.load(path: path).allowList() } }
        }
        return options
    }
}

/// A CURVE key pair on disk: JSON `{"publicKey", "secretKey"}` with mode 0600 (`callveil keygen`).
public enum CurveKeyFile {
    /// Reads a key file.
    public static func read(_ path: String) throws -> CurveKeyPair {
        do {
            return try JSONDecoder().decode(CurveKeyPair.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ConfigError("cannot read CURVE key file \(path): \(error)")
        }
    }

    /// Writes a key file readable only by its owner. An existing file is replaced only when `replace` is true
    /// (then atomically): peers may already trust its public key, and its secret half is not recoverable.
    public static func write(_ keys: CurveKeyPair, to path: String, replace: Bool = false) throws {
        if !replace, FileManager.default.fileExists(atPath: path) {
            throw ConfigError("\(path) exists: its public key may already be trusted by the cluster; give --force to replace it")
        }
        let data = try JSONEncoder().encode(keys)
        let temporary = path + ".new"
        try? FileManager.default.removeItem(atPath: temporary)
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]),
              rename(temporary, path) == 0 else {
            try? FileManager.default.removeItem(atPath: temporary)
            throw ConfigError("cannot write \(path)")
        }
    }
}
