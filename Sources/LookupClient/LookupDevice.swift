import BFV
import Crypto
import Foundation
import LookupProtocol
import PIR

/// A client that behaves like an iPhone's Live Caller ID Lookup (SPEC-PIR §7.0, §6.5): it keeps each use case's
/// config (sending its config id so the server can answer "reuse"), generates a secret key per key config,
/// uploads the evaluation key when the server's `KeyStatus` timestamp differs from its own, and sends one
/// `/queries` call per lookup, decrypting the answer locally.
public actor LookupDevice {
    /// What the device holds for one use case.
    struct UseCaseState {
        var configID: [UInt8]
        var pirConfig: ProtoPIRConfig
        var client: KeywordPirClient
        var keyConfigHash: [UInt8]
    }

    /// A secret key and the timestamp it was generated at.
    struct KeyState {
        var secretKey: SecretKey
        var timestamp: UInt64
    }

    /// The HTTP transport (the front door this device talks to now).
    public private(set) var http: LookupHTTPClient
    /// `User-Identifier` header.
    public let userIdentifier: String
    /// `User-Agent` header.
    public let userAgent: String
    private let authorization: any AuthorizationProvider
    private var useCases: [String: UseCaseState] = [:]
    private var keys: [[UInt8]: KeyState] = [:]
    private var serverTimestamps: [[UInt8]: UInt64] = [:]
    private var keyConfigs: [[UInt8]: EvaluationKeyConfigMessage] = [:]
    /// Bytes sent and received, for the bench harness.
    public private(set) var bytesSent = 0, bytesReceived = 0
    /// Size of the last evaluation-key upload body.
    public private(set) var lastKeyUploadBytes = 0
    /// When the config was last synced (nil: never).
    public private(set) var lastConfigSync: ContinuousClock.Instant?
    /// Duration of the last HTTP exchange (request sent to answer read; excludes token fetches and local crypto).
    public private(set) var lastExchange: Duration = .zero

    /// A device talking to `http` with a random user identifier unless one is given.
    public init(http: LookupHTTPClient, userIdentifier: String = UUID().uuidString,
                userAgent: String = "com.apple.ciphermld/1.0 iOS/18.2 CallVeil",
                authorization: any AuthorizationProvider = NoAuthorization()) {
        self.http = http
        self.userIdentifier = userIdentifier
        self.userAgent = userAgent
        self.authorization = authorization
    }

    /// Sends from now on to another front door: behind a load balancer a device reaches any coordinator, and
    /// its keys and config (on the server, in the shared store) follow it.
    public func route(to http: LookupHTTPClient) {
        self.http = http
    }

    /// `POST path` with the device headers; 503 and 429 throw `LookupClientError.unavailable` (with the
    /// `Retry-After` seconds), other non-200 answers `LookupClientError.http`.
    public func post(_ path: String, body: [UInt8]) async throws -> [UInt8] {
        var headers = [("User-Identifier", userIdentifier), ("User-Agent", userAgent)]
        if let auth = try await authorization.authorization() { headers.append(("Authorization", auth)) }
        let start = ContinuousClock.now
        let (status, responseHeaders, answer) = try await http.exchange(path: path, headers: headers, body: body)
        lastExchange = ContinuousClock.now - start
        bytesSent += body.count
        bytesReceived += answer.count
        guard status == 200 else { throw LookupClientError.answer(status: status, headers: responseHeaders, body: answer) }
        return answer
    }

    /// Syncs the configs of `names` (sending held config ids) and the server's key timestamps.
    public func syncConfig(_ names: [String]) async throws {
        let request = ProtoConfigRequest.with {
            $0.usecases = names
            $0.existingConfigIds = names.map { Data(useCases[$0]?.configID ?? []) }
        }
        let response = try ProtoConfigResponse(serializedBytes: try await post("/config", body: try request.serializedBytes()))
        lastConfigSync = .now
        for name in names {
            guard let config = response.configs[name] else { throw LookupClientError.unknownUseCase(name) }
            if config.reuseExistingConfig {
                guard useCases[name] != nil else { throw LookupClientError.protocolViolation("reuse for a config the device does not hold") }
                continue
            }
            guard case .pirConfig(let pir)? = config.config else { throw LookupClientError.protocolViolation("no PIR config for \(name)") }
            useCases[name] = UseCaseState(configID: [UInt8](config.configID), pirConfig: pir, client: try Self.pirClient(pir),
                                          keyConfigHash: [UInt8](pir.evaluationKeyConfigHash))
        }
        var seen = Set<[UInt8]>()
        for status in response.keyInfo {
            let hash = Array(SHA256.hash(data: try status.keyConfig.serializedBytes() as [UInt8]))
            guard seen.insert(hash).inserted else { continue }  // use cases sharing a key config share one key
            serverTimestamps[hash] = status.timestamp
            keyConfigs[hash] = status.keyConfig
            if keys[hash]?.timestamp != status.timestamp {
                try await uploadKey(for: status.keyConfig, hash: hash)
            }
        }
    }

    /// The evaluation-key config of a synced use case, and its hash (the key's identifier).
    public func keyConfig(forUseCase name: String) -> (config: EvaluationKeyConfigMessage, hash: [UInt8])? {
        guard let state = useCases[name], let config = keyConfigs[state.keyConfigHash] else { return nil }
        return (config, state.keyConfigHash)
    }

    /// The config id the device holds for a use case.
    public func configID(_ name: String) -> [UInt8]? { useCases[name]?.configID }

    /// Generates a new secret key for a key config and uploads its evaluation key.
    func uploadKey(for keyConfig: EvaluationKeyConfigMessage, hash: [UInt8]) async throws {
        var timestamp = UInt64(Date().timeIntervalSince1970)
        if let old = keys[hash]?.timestamp, old >= timestamp { timestamp = old + 1 }
        let (bytes, secretKey) = try Self.keyUpload(for: keyConfig, hash: hash, timestamp: timestamp)
        _ = try await post("/key", body: bytes)
        lastKeyUploadBytes = bytes.count
        keys[hash] = KeyState(secretKey: secretKey, timestamp: timestamp)
        serverTimestamps[hash] = timestamp
    }

    /// A `/key` body with a fresh evaluation key for a synced use case's key config, not uploaded and not kept
    /// (load tools send it from other User-Identifiers).
    public func freshKeyUpload(for name: String) throws -> [UInt8] {
        guard let state = useCases[name], let keyConfig = keyConfigs[state.keyConfigHash] else {
            throw LookupClientError.unknownUseCase(name)
        }
        return try Self.keyUpload(for: keyConfig, hash: state.keyConfigHash,
                                  timestamp: UInt64(Date().timeIntervalSince1970)).body
    }

    public static func keyUpload(for keyConfig: EvaluationKeyConfigMessage, hash: [UInt8], timestamp: UInt64) throws
        -> (body: [UInt8], secretKey: SecretKey) {
        let context = try Context(parameters: try keyConfig.encryptionParameters.native())
        let secretKey = SecretKey(context: context)
        let key = try uploadedKey(for: keyConfig, hash: hash, timestamp: timestamp, secretKey: secretKey)
        return (try ProtoEvaluationKeys.with { $0.keys = [key] }.serializedBytes(), secretKey)
    }

    /// One entry of a `/key` body: the evaluation key of `secretKey` for a key config, with its metadata.
    public static func uploadedKey(for keyConfig: EvaluationKeyConfigMessage, hash: [UInt8], timestamp: UInt64,
                                   secretKey: SecretKey) throws -> ProtoUploadedKey {
        let evaluationKey = try EvaluationKey(config: keyConfig.native(), secretKey: secretKey)
        return .with {
            $0.metadata = .with {
                $0.timestamp = timestamp
                $0.identifier = Data(hash)
            }
            $0.evaluationKey = ProtoEvaluationKey(evaluationKey.serialize())
        }
    }

    /// The keyword-PIR client of a use case's PIR config.
    public static func pirClient(_ pir: ProtoPIRConfig) throws -> KeywordPirClient {
        let context = try Context(parameters: try pir.encryptionParameters.native())
        return try KeywordPirClient(context: context, shards: try pir.shardParameters(), sharding: try pir.shardingFunction())
    }

    /// Looks `keyword` up in a use case: the value, or nil when absent. Syncs config and key first if needed.
    public func lookup(_ keyword: [UInt8], in name: String) async throws -> [UInt8]? {
        let request = try await queryRequest(keyword, in: name)
        let answer = try await post("/queries", body: try request.serializedBytes())
        return try decode(answer, keyword: keyword, in: name)
    }

    /// The `/queries` body for `keyword` (one `Request`), syncing config and key first if needed.
    public func queryRequest(_ keyword: [UInt8], in name: String) async throws -> ProtoRequests {
        if useCases[name] == nil { try await syncConfig([name]) }
        guard let state = useCases[name] else { throw LookupClientError.unknownUseCase(name) }
        guard let key = keys[state.keyConfigHash] else {
            throw LookupClientError.protocolViolation("the server sent no key status for \(name)'s key config")
        }
        return try Self.queryRequest(keyword, in: name, client: state.client, configID: state.configID,
                                     keyConfigHash: state.keyConfigHash, secretKey: key.secretKey, timestamp: key.timestamp)
    }

    /// The `/queries` body (one `Request`) a device holding `secretKey` (uploaded at `timestamp`) sends for `keyword`.
    public static func queryRequest(_ keyword: [UInt8], in name: String, client: KeywordPirClient, configID: [UInt8],
                                    keyConfigHash: [UInt8], secretKey: SecretKey, timestamp: UInt64) throws -> ProtoRequests {
        let (shard, query) = try client.generateQuery(keyword: keyword, secretKey: secretKey)
        return ProtoRequests.with {
            $0.requests = [.with {
                $0.usecase = name
                $0.pirRequest = .with {
                    $0.shardIndex = UInt32(shard)
                    $0.query = ProtoEncryptedIndices(query, pirCalls: client.shards[shard].batchSize)
                    $0.evaluationKeyMetadata = .with {
                        $0.timestamp = timestamp
                        $0.identifier = Data(keyConfigHash)
                    }
                    $0.configurationHash = Data(configID)
                }
            }]
        }
    }

    /// Decrypts a `/queries` answer for `keyword`: the value, or nil when absent.
    public func decode(_ answer: [UInt8], keyword: [UInt8], in name: String) throws -> [UInt8]? {
        guard let state = useCases[name], let key = keys[state.keyConfigHash] else { throw LookupClientError.unknownUseCase(name) }
        return try Self.decode(answer, keyword: keyword, client: state.client, secretKey: key.secretKey)
    }

    /// Decrypts a `/queries` answer (one PIR response) for `keyword` with `secretKey`: the value, or nil when absent.
    public static func decode(_ answer: [UInt8], keyword: [UInt8], client: KeywordPirClient, secretKey: SecretKey) throws -> [UInt8]? {
        let responses = try ProtoResponses(serializedBytes: answer)
        guard responses.responses.count == 1, case .pirResponse(let response)? = responses.responses[0].response else {
            throw LookupClientError.protocolViolation("expected one PIR response")
        }
        let replies = try response.native(context: client.context)
        return try client.decrypt(replies: replies, keyword: keyword, secretKey: secretKey)
    }

    /// The device's key timestamp for a use case's key config.
    public func keyTimestamp(_ name: String) -> UInt64? {
        useCases[name].flatMap { keys[$0.keyConfigHash]?.timestamp }
    }

    /// Forgets the secret keys, as a device does when it rotates them (the next sync uploads new ones).
    public func forgetKeys() { keys.removeAll() }
}
