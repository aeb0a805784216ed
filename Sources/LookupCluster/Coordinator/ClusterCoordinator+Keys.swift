import Cluster
import Foundation
import LookupProtocol
import LookupService

extension ClusterCoordinator {
    /// Pushes a key just stored to every live worker (each parses it for the use cases it serves).
    public func keyUploaded(_ key: StoredEvaluationKey) async {
        let workers = state.withLock { Array($0.workers.keys) }
        let push = ClusterMessage.with {
            $0.keyPush = .with {
                $0.user = key.user
                $0.identifier = Data(key.identifier)
                $0.timestamp = key.timestamp
                $0.key = Data(key.serialized)
            }
        }
        for worker in workers { send(to: worker, push) }
    }

    /// Answers a worker's key fetch from the key store.
    func keyRequest(from name: String, id: UInt64, _ request: Callveil_Cluster_V1_KeyRequest) {
        guard request.user.utf8.count <= ClusterLimits.maxUserBytes, request.identifier.count <= ClusterLimits.maxKeyIdentifierBytes else {
            return reject("key request", worker: name)
        }
        Task {
            let stored = try? await keyStore.key(user: request.user, identifier: [UInt8](request.identifier))
            send(to: name, .with {
                $0.requestID = id
                $0.keyReply = .with {
                    $0.found = stored != nil
                    $0.timestamp = stored?.timestamp ?? 0
                    $0.key = Data(stored?.serialized ?? [])
                }
            })
        }
    }
}
