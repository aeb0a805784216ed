import Logging
import LookupEngine
import PostgresNIO

/// The shared store's schema, as numbered migrations applied in order, each once, recorded in
/// `callveil_schema_migrations`. Several coordinators may start at once: the whole run holds a transaction-level
/// advisory lock, and PostgreSQL's DDL is transactional, so a migration is applied completely or not at all.
/// A database migrated by a newer build (a version this build does not know) is refused rather than used.
enum PostgresMigrations {
    /// One schema step.
    struct Migration: Sendable {
        let version: Int
        let name: String
        let statements: [String]
    }

    /// Advisory-lock key of the migration run (an arbitrary constant, "CVMG").
    static let lockKey: Int64 = 0x4356_4D47

    /// Every migration, in order. Never edit a released one: add the next.
    static let all: [Migration] = [
        Migration(version: 1, name: "evaluation keys and spent nonces", statements: [
            // Evaluation keys: user identifiers are stored as keyed hashes, keys sealed (StoreSealing).
            """
            CREATE TABLE evaluation_keys (
                user_tag bytea NOT NULL,
                identifier bytea NOT NULL,
                device_timestamp bigint NOT NULL,
                uploaded_at double precision NOT NULL,
                key_bytes integer NOT NULL CHECK (key_bytes >= 0),
                sealed_key bytea NOT NULL,
                PRIMARY KEY (user_tag, identifier)
            )
            """,
            "CREATE INDEX evaluation_keys_uploaded_at ON evaluation_keys (uploaded_at)",
            // Usage counters, 16 slots by the user hash's first byte, so concurrent uploads rarely share a row.
            """
            CREATE TABLE evaluation_key_usage (
                slot smallint PRIMARY KEY CHECK (slot BETWEEN 0 AND 15),
                keys bigint NOT NULL,
                bytes bigint NOT NULL
            )
            """,
            "INSERT INTO evaluation_key_usage SELECT s, 0, 0 FROM generate_series(0, 15) AS s",
            """
            CREATE FUNCTION callveil_evaluation_key_usage() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP = 'INSERT' THEN
                    UPDATE evaluation_key_usage SET keys = keys + 1, bytes = bytes + NEW.key_bytes
                        WHERE slot = get_byte(NEW.user_tag, 0) % 16;
                ELSIF TG_OP = 'DELETE' THEN
                    UPDATE evaluation_key_usage SET keys = keys - 1, bytes = bytes - OLD.key_bytes
                        WHERE slot = get_byte(OLD.user_tag, 0) % 16;
                ELSE
                    UPDATE evaluation_key_usage SET bytes = bytes - OLD.key_bytes + NEW.key_bytes
                        WHERE slot = get_byte(NEW.user_tag, 0) % 16;
                END IF;
                RETURN NULL;
            END $$
            """,
            """
            CREATE TRIGGER evaluation_keys_usage AFTER INSERT OR DELETE OR UPDATE OF key_bytes ON evaluation_keys
                FOR EACH ROW EXECUTE FUNCTION callveil_evaluation_key_usage()
            """,
            // Spent nonces: one partition per issuer key, so forgetting a retired key is a detach and a drop.
            """
            CREATE TABLE spent_nonces (
                key_id bytea NOT NULL,
                nonce bytea NOT NULL,
                PRIMARY KEY (key_id, nonce)
            ) PARTITION BY LIST (key_id)
            """,
            """
            CREATE TABLE nonce_counts (
                key_id bytea NOT NULL,
                slot smallint NOT NULL,
                count bigint NOT NULL,
                PRIMARY KEY (key_id, slot)
            )
            """,
        ]),
        Migration(version: 2, name: "issuer keys", statements: [
            // Privacy Pass issuer keys: the private key's PEM sealed (StoreSealing) and bound to its key id.
            """
            CREATE TABLE issuer_keys (
                key_id bytea PRIMARY KEY,
                tier text NOT NULL,
                not_before double precision NOT NULL,
                not_after double precision NOT NULL,
                sealed_pem bytea NOT NULL
            )
            """,
        ]),
        Migration(version: 3, name: "cluster placement and worker registry", statements: [
            // The placement leader's term: bumped by every coordinator that takes the leader lock, so a write by an
            // older leader (a stalled process acting on an old belief) is refused by the database.
            """
            CREATE TABLE cluster_leadership (
                role text PRIMARY KEY,
                term bigint NOT NULL CHECK (term > 0),
                holder text NOT NULL,
                since timestamptz NOT NULL DEFAULT now()
            )
            """,
            // The desired state (every shard of every dataset version served, its content hash and its holders),
            // written by the leader under its term, read by every coordinator.
            """
            CREATE TABLE cluster_desired_state (
                id smallint PRIMARY KEY CHECK (id = 1),
                term bigint NOT NULL,
                generation bigint NOT NULL,
                state jsonb NOT NULL,
                written_by text NOT NULL,
                written_at timestamptz NOT NULL DEFAULT now()
            )
            """,
            // Workers as the leader last saw them (for operators; placement never reads it).
            """
            CREATE TABLE cluster_workers (
                worker_id text PRIMARY KEY,
                seen_by text NOT NULL,
                shards integer NOT NULL,
                last_seen timestamptz NOT NULL
            )
            """,
        ]),
        Migration(version: 4, name: "oblivious HTTP gateway keys", statements: [
            // The gateway's X25519 private keys, sealed (StoreSealing, bound to the key id), shared by every gateway.
            """
            CREATE TABLE gateway_keys (
                key_id smallint PRIMARY KEY CHECK (key_id BETWEEN 0 AND 255),
                created double precision NOT NULL,
                not_after double precision NOT NULL,
                sealed_key bytea NOT NULL
            )
            """,
        ]),
        Migration(version: 5, name: "reports and call directory lists", statements: [
            // One row per number and reporter (a pseudonym): the latest verdict; notes sealed (StoreSealing).
            """
            CREATE TABLE number_reports (
                number text NOT NULL, reporter text NOT NULL, channel text NOT NULL, verdict text NOT NULL,
                category text, sealed_note bytea, report_id text NOT NULL,
                first_seen double precision NOT NULL, last_seen double precision NOT NULL,
                PRIMARY KEY (number, reporter)
            )
            """,
            """
            CREATE TABLE url_reports (url text PRIMARY KEY, reports bigint NOT NULL,
                                      first_seen double precision NOT NULL, last_seen double precision NOT NULL)
            """,
            """
            CREATE TABLE report_decisions (number text PRIMARY KEY, action text NOT NULL, note text NOT NULL,
                                           decided_at double precision NOT NULL)
            """,
            // Call Directory lists as version intervals: every version stays readable.
            """
            CREATE TABLE directory_entries (list text NOT NULL, number bigint NOT NULL, label text NOT NULL, reason text NOT NULL,
                                            added integer NOT NULL, removed integer, PRIMARY KEY (list, number, added))
            """,
            """
            CREATE TABLE directory_versions (list text NOT NULL, version integer NOT NULL, created_at double precision NOT NULL,
                                             entries integer NOT NULL, PRIMARY KEY (list, version))
            """,
        ]),
        Migration(version: 6, name: "oblivious HTTP replay record", statements: [
            // The encapsulated keys of requests any gateway opened, for the replay window (PostgresReplayStore).
            "CREATE TABLE ohttp_replays (enc bytea PRIMARY KEY, seen_at double precision NOT NULL)",
            "CREATE INDEX ohttp_replays_seen_at ON ohttp_replays (seen_at)",
        ]),
        Migration(version: 7, name: "one table of rotating keys", statements: [
            // Issuer and gateway keys in one table (PostgresRotatingKeyStore), rows moved as they are: each sealed
            // key keeps its sealing context, which binds it to its ring and identifier.
            """
            CREATE TABLE rotating_keys (
                ring text NOT NULL,
                key_id bytea NOT NULL,
                key_group text NOT NULL,
                not_before double precision NOT NULL,
                not_after double precision NOT NULL,
                sealed_key bytea NOT NULL,
                PRIMARY KEY (ring, key_id)
            )
            """,
            """
            INSERT INTO rotating_keys (ring, key_id, key_group, not_before, not_after, sealed_key)
                SELECT 'issuer', key_id, tier, not_before, not_after, sealed_pem FROM issuer_keys
            """,
            """
            INSERT INTO rotating_keys (ring, key_id, key_group, not_before, not_after, sealed_key)
                SELECT 'gateway', decode(lpad(to_hex(key_id::integer), 2, '0'), 'hex'), '', created, not_after, sealed_key FROM gateway_keys
            """,
            "DROP TABLE issuer_keys",
            "DROP TABLE gateway_keys",
        ]),
    ]

    /// The newest version this build knows.
    static var latest: Int { all.last?.version ?? 0 }

    /// Applies every pending migration (up to `target`, for tests of a migration) in one transaction; returns the
    /// versions applied.
    @discardableResult
    static func apply(connection: PostgresConnection, logger: Logger, upTo target: Int = .max) async throws -> [Int] {
        try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
        try await connection.query("""
            CREATE TABLE IF NOT EXISTS callveil_schema_migrations (
                version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
            """, logger: logger)
        var current = 0
        for try await (version) in try await connection.query(
            "SELECT COALESCE(MAX(version), 0) FROM callveil_schema_migrations", logger: logger).decode(Int.self) {
            current = version
        }
        guard current <= latest else {
            throw StoreError(.schema, "the database schema is at version \(current); this build knows up to \(latest)")
        }
        var applied: [Int] = []
        for migration in all where migration.version > current && migration.version <= target {
            for statement in migration.statements {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await connection.query(
                "INSERT INTO callveil_schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                logger: logger)
            logger.notice("schema migrated", metadata: ["version": .stringConvertible(migration.version),
                                                         "name": .string(migration.name)])
            applied.append(migration.version)
        }
        return applied
    }
}
