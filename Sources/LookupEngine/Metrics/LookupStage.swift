/// A stage of a lookup's path through the service, the `stage` label of `callveil_lookup_stage_seconds`: the
/// histograms say where a slow lookup's time went (a fixed set, so the label stays bounded).
public enum LookupStage: String, CaseIterable, Sendable {
    /// Opening an Oblivious HTTP request at the gateway (key lookup, HPKE open, Binary HTTP parse).
    case decapsulation
    /// A PIR request's wait at the public port's fair gate for one of its processing slots.
    case admissionWait = "admission_wait"
    /// Checking a Privacy Pass token and spending its nonce.
    case tokenCheck = "token_check"
    /// Routing a `/queries` call: checking the stored key's timestamp and finding each request's use case.
    case routing
    /// Every shard query of a `/queries` call, from the first sent to the last answered.
    case execution
    /// A coordinator's shard query from sending it to a worker to the worker's answer.
    case clusterRoundTrip = "cluster_round_trip"
    /// A parsed-key cache miss: reading the key (store or coordinator).
    case keyFetch = "key_fetch"
    /// Parsing a fetched key on a compute slot (its wait for the slot is a `queue_wait`).
    case keyParse = "key_parse"
    /// A query job's wait for a compute slot.
    case queueWait = "queue_wait"
    /// A key-parsing job's wait for a compute slot.
    case keyQueueWait = "key_queue_wait"
    /// The PIR computation of one shard query on a compute slot.
    case compute
}
