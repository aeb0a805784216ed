import ClusterTransport
import Foundation
import LookupEngine
import LookupProtocol

extension ShardQuery {
    /// The cluster message carrying this query (the coordinator's side of the one codec pair).
    package var wireRequest: Callveil_Cluster_V1_QueryRequest {
        var request = Callveil_Cluster_V1_QueryRequest()
        request.shard = ShardKey(useCase: useCase, configID: configID, shard: shardIndex).ref
        request.query = query
        switch key {
        case .stored(let user, let identifier, let timestamp):
            request.user = user
            request.keyIdentifier = Data(identifier)
            request.keyTimestamp = timestamp
        case .inline(let key):
            request.inlineKey = key
        }
        return request
    }

    /// The query a cluster message carries for `shard` (its validated reference; the worker's side).
    package init(wire request: Callveil_Cluster_V1_QueryRequest, shard: ShardKey) {
        let key: EvaluationKeySource = request.hasInlineKey ? .inline(request.inlineKey)
            : .stored(user: request.user, identifier: [UInt8](request.keyIdentifier), timestamp: request.keyTimestamp)
        self.init(useCase: shard.useCase, configID: shard.configID, shardIndex: shard.shard, query: request.query, key: key)
    }
}
