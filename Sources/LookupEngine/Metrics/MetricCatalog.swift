/// Every metric family CallVeil exports, with its `# HELP` text: one list, so each name is documented once, a
/// family's help is the same wherever it is recorded, and a test can hold the exposition to it.
public enum MetricCatalog {
    /// Family name → help text.
    public static let help: [String: String] = [
        // HTTP, every listener
        "callveil_http_requests_total": "HTTP requests answered, by route and result (ok, client_error, overloaded, server_error, cancelled).",
        "callveil_http_request_duration_seconds": "Time from a request's head to its answer, by route.",
        "callveil_rejected_requests_total": "Requests refused for the client's input, by reason.",
        "callveil_admission_refusals_total": "Requests refused at the fair admission gate in front of PIR work, by reason.",
        "callveil_http_connections_closed_total": "Connections the server closed itself, by reason.",
        "callveil_http_request_timeouts_total": "Requests whose head or body did not arrive within the request deadline.",
        "callveil_http_requests_abandoned_total": "Requests whose client went away before the answer; their work was cancelled.",
        "callveil_http_slow_bodies_total": "Request bodies refused for arriving below the minimum rate.",
        // Lookups
        "callveil_pir_compute_seconds": "PIR computation of one shard query, by use case.",
        "callveil_lookup_stage_seconds": "Time one lookup spent in each stage.",
        "callveil_key_cache_lookups_total": "Parsed evaluation-key cache lookups, by result (hit, miss).",
        "callveil_key_store_fallbacks_total": "Queries whose evaluation key was read from the store because the cache missed.",
        "callveil_evaluation_keys_stored": "Evaluation keys held in the key store, expired ones until purged.",
        "callveil_evaluation_keys_stored_bytes": "Bytes of evaluation keys held in the key store.",
        "callveil_evaluation_keys_evicted_total": "Evaluation keys evicted to keep the store within its size limit.",
        "callveil_evaluation_keys_expired_total": "Evaluation keys deleted after their maximum age.",
        // Privacy Pass and the gateway
        "callveil_privacy_pass_nonces_stored": "Spent token nonces held (all issuer keys).",
        "callveil_privacy_pass_nonces_per_key_limit": "Spent nonces an issuer key may hold before its tokens are refused.",
        "callveil_issuer_key_rotations_total": "Issuer key rotations this process carried out or loaded.",
        "callveil_key_rotation_due_timestamp_seconds": "When the next key of a ring is due to be created (Unix time), by ring (issuer, ohttp).",
        "callveil_key_expiry_timestamp_seconds": "End of validity of a ring's newest key (Unix time; the earliest over groups), by ring.",
        "callveil_ohttp_requests_total": "Oblivious HTTP requests, by result.",
        "callveil_ohttp_request_seconds": "Oblivious HTTP request time, by phase (total, target).",
        "callveil_ohttp_decapsulation_failures_total": "Encapsulated requests that could not be opened, by error code.",
        "callveil_ohttp_key_rotations_total": "Gateway key rotations this process carried out or loaded.",
        "callveil_ohttp_replay_cache_entries": "Encapsulated requests remembered against replay.",
        // Reports and feeds
        "callveil_reports_total": "Reports accepted, by outcome and verdict.",
        "callveil_report_refusals_total": "Reports refused, by error code.",
        "callveil_url_reports_total": "URL filter reports accepted.",
        "callveil_url_prefilter_downloads_total": "URL filter prefilter downloads, by result.",
        "callveil_call_directory_pages_total": "Call Directory pages served, by list and result.",
        // Cluster: coordinator
        "callveil_cluster_workers": "Workers connected to this coordinator.",
        "callveil_cluster_placement_leader": "1 when this coordinator leads placement, else 0.",
        "callveil_cluster_replication_target": "Workers each shard should be held by: the configured replication, at most the workers on the allow-list.",
        "callveil_cluster_shards_desired": "Shards the cluster must serve.",
        "callveil_cluster_shards_unserved": "Desired shards no connected worker holds with the desired content.",
        "callveil_cluster_shards_under_replicated": "Desired shards held with the desired content by fewer workers than the replication target.",
        "callveil_cluster_handshakes_refused_total": "Worker connections refused by CURVE authentication (unknown or revoked key).",
        "callveil_cluster_messages_rejected_total": "Messages from cluster members rejected, by reason.",
        "callveil_cluster_assigns_sent_total": "Shard assignments sent to workers.",
        "callveil_cluster_drops_sent_total": "Shard drops sent to workers.",
        "callveil_cluster_keys_pushed_total": "Evaluation keys pushed to workers.",
        "callveil_cluster_leadership_changes_total": "Placement leadership changes, by change (gained, lost).",
        "callveil_cluster_queries_shed_total": "Queries answered 503 because no replica had credit in time.",
        "callveil_cluster_queries_cancelled_total": "Queries cancelled because their client went away.",
        "callveil_cluster_transfer_failures_total": "Shard transfers that failed and will be retried.",
        "callveil_cluster_transfer_bytes_total": "Compressed shard bytes sent to workers, by kind (whole: chunks of a shard file; patch: the ranges a data update changed).",
        // Cluster: worker
        "callveil_worker_shard_bytes": "Bytes of shard evaluation form held by this worker, by backing (memory, mapped).",
        "callveil_worker_shards": "Shards this worker holds loaded.",
        "callveil_worker_keys_expired_total": "Evaluation keys this worker dropped after their maximum age.",
        // Process and configuration
        "callveil_build_info": "Always 1; the version of the running build as a label.",
        "callveil_config_reloads_total": "Configuration reloads, by result (success, failure).",
        "callveil_config_last_reload_successful": "1 when the last reload (or the start) loaded every use case, else 0.",
        "callveil_config_last_reload_success_timestamp_seconds": "When the configuration last loaded in full (Unix time).",
        "process_cpu_seconds_total": "User and system CPU time spent by the process.",
        "process_resident_memory_bytes": "Resident memory of the process.",
        "process_virtual_memory_bytes": "Virtual memory of the process.",
        "process_open_fds": "Open file descriptors of the process.",
        "process_max_fds": "Limit of open file descriptors of the process.",
        "process_start_time_seconds": "Start time of the process since the Unix epoch.",
        // Canary
        "callveil_canary_probes_total": "Canary lookups through the public path, by result (ok, wrong, failed).",
        "callveil_canary_up": "1 when the last canary lookup returned the expected answer, else 0.",
        "callveil_canary_lookup_duration_seconds": "Time of one canary lookup, from key upload to decrypted answer.",
        "callveil_canary_last_success_timestamp_seconds": "When a canary lookup last returned the expected answer (Unix time).",
    ]
}
