import LookupProtocol
import SwiftProtobuf

/// Frames `ClusterMessage`s: one serialized message per ZeroMQ frame, version-checked and size-bounded.
public enum ClusterCodec {
    /// The protocol version this build speaks.
    public static let version: UInt32 = 1
    /// Largest message accepted (a query with an inline key, or a shard chunk).
    public static let maxMessageBytes = 32 << 20

    /// The bytes of a message, with the version set.
    public static func encode(_ message: ClusterMessage) -> [UInt8] {
        var message = message
        message.version = version
        return (try? message.serializedBytes()) ?? []
    }

    /// A message from bytes; throws for oversized, malformed or other-version messages.
    public static func decode(_ bytes: [UInt8]) throws -> ClusterMessage {
        guard bytes.count <= maxMessageBytes else { throw ClusterError.malformed("message of \(bytes.count) bytes") }
        let message: ClusterMessage
        do { message = try ClusterMessage(serializedBytes: bytes) } catch {
            throw ClusterError.malformed("\(error)")
        }
        guard message.version == version else { throw ClusterError.versionMismatch(message.version) }
        return message
    }
}

/// The generated coordinator-worker messages.
public typealias ClusterMessage = Callveil_Cluster_V1_ClusterMessage
/// A shard of a use-case version.
public typealias ClusterShardRef = Callveil_Cluster_V1_ShardRef
