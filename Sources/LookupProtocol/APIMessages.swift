/// Short names for the generated messages of the HTTP API (SPEC-PIR §1.3, §1.5, §1.6).
public typealias ProtoConfigRequest = Apple_SwiftHomomorphicEncryption_Api_V1_ConfigRequest
/// One use case's configuration (or the reuse flag).
public typealias ProtoConfig = Apple_SwiftHomomorphicEncryption_Api_V1_Config
/// Answer to `POST /config`.
public typealias ProtoConfigResponse = Apple_SwiftHomomorphicEncryption_Api_V1_ConfigResponse
/// Body of `POST /queries`.
public typealias ProtoRequests = Apple_SwiftHomomorphicEncryption_Api_V1_Requests
/// Answer to `POST /queries`.
public typealias ProtoResponses = Apple_SwiftHomomorphicEncryption_Api_V1_Responses
/// One query of a `Requests` body.
public typealias ProtoRequest = Apple_SwiftHomomorphicEncryption_Api_V1_Request
/// One answer of a `Responses` body.
public typealias ProtoResponse = Apple_SwiftHomomorphicEncryption_Api_V1_Response
/// The PIR configuration of a use case.
public typealias ProtoPIRConfig = Apple_SwiftHomomorphicEncryption_Api_Pir_V1_PIRConfig
/// The server's view of a device key.
public typealias ProtoKeyStatus = Apple_SwiftHomomorphicEncryption_Api_Shared_V1_KeyStatus
/// Body of `POST /key`.
public typealias ProtoEvaluationKeys = Apple_SwiftHomomorphicEncryption_Api_Shared_V1_EvaluationKeys
/// One uploaded evaluation key with its metadata.
public typealias ProtoUploadedKey = Apple_SwiftHomomorphicEncryption_Api_Shared_V1_EvaluationKey
/// Timestamp and key-config hash of an uploaded key.
public typealias ProtoEvaluationKeyMetadata = Apple_SwiftHomomorphicEncryption_Api_Shared_V1_EvaluationKeyMetadata
/// The identity value of the identity use case.
public typealias ProtoCallIdentity = CallIdentity
/// The dataset input of `build-db`.
public typealias ProtoInputIdentities = InputIdentities
