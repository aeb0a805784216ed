import Foundation

/// An evaluation key as stored: who uploaded it, for which key config, the device's timestamp (echoed
/// verbatim in `KeyStatus`), when it arrived, and the serialized `SerializedEvaluationKey` message.
public struct StoredEvaluationKey: Sendable, Equatable {
    /// The `User-Identifier` header of the upload.
    public let user: String
    /// `EvaluationKeyMetadata.identifier`: SHA-256 of the key config.
    public let identifier: [UInt8]
    /// `EvaluationKeyMetadata.timestamp`, unchanged.
    public let timestamp: UInt64
    /// Server time of the upload; keys expire by this.
    public let uploadedAt: Date
    /// The serialized `v1.SerializedEvaluationKey`.
    public let serialized: [UInt8]

    /// A stored key.
    public init(user: String, identifier: [UInt8], timestamp: UInt64, uploadedAt: Date, serialized: [UInt8]) {
        self.user = user
        self.identifier = identifier
        self.timestamp = timestamp
        self.uploadedAt = uploadedAt
        self.serialized = serialized
    }
}
