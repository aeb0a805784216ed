import Foundation
import Logging
import LookupEngine
import PostgresNIO
import Synchronization

/// Leadership among processes that share the store (coordinators: one of them owns placement decisions): a
/// session-level advisory lock held on a connection of its own. The holder checks its session every
/// `checkInterval` and steps down as soon as a check fails or times out; the server ends a dead holder's session
/// (and frees the lock) within a few seconds through the session's TCP settings (`tcp_user_timeout`,
/// keepalives), so a holder that cannot reach the database stops leading before another can start. Everyone
/// else tries to take the lock every `checkInterval`. Leadership is also a lease: `isLeader` turns false once the
/// last successful check started more than `lease` ago, so a holder whose checks stall (a starved or paused
/// process) stops believing it leads without having to run. Writes that only a leader may make still need a fence
/// of their own (a stalled holder can act on an old belief): make them through a check the database enforces.
public final class PostgresLeaderLock: Sendable {
    /// The advisory-lock key (one per role that needs a leader).
    public let key: Int64
    /// Time between checks (and attempts); also the deadline of one check.
    public let checkInterval: Duration
    private let settings: PostgresSettings
    private let logger: Logger
    /// When the last successful check (or the acquisition) started, while this process holds the lock.
    private let confirmed = Mutex<ContinuousClock.Instant?>(nil)
    /// How long one successful check keeps `isLeader` true: three check intervals.
    public var lease: Duration { checkInterval * 3 }
    private let loop = Mutex<Task<Void, Never>?>(nil)
    private let onChange: @Sendable (Bool) -> Void

    /// A lock on `key` in the store at `settings`; `onChange` hears every gain and loss of leadership.
    public init(settings: PostgresSettings, key: Int64, checkInterval: Duration = .seconds(1), logger: Logger,
                onChange: @escaping @Sendable (Bool) -> Void = { _ in }) {
        self.settings = settings
        self.key = key
        self.checkInterval = checkInterval
        self.logger = logger
        self.onChange = onChange
    }

    /// Whether this process holds the lock, as last confirmed within the lease.
    public var isLeader: Bool {
        guard let at = confirmed.withLock({ $0 }) else { return false }
        return ContinuousClock.now - at < lease
    }

    /// Starts trying to take (and keep) the lock.
    public func start() {
        loop.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in await run() }
        }
    }

    /// Gives the lock up (closing its session) and stops trying.
    public func stop() async {
        let task = loop.withLock { $0 }
        task?.cancel()
        await task?.value
    }

    /// Records a successful check that started at `at`, or (nil) the loss of the lock.
    private func setLeading(_ at: ContinuousClock.Instant?) {
        let changed = confirmed.withLock { current -> Bool in
            defer { current = at }
            return (current == nil) != (at == nil)
        }
        guard changed else { return }
        let value = at != nil
        if value { logger.notice("leadership taken", metadata: ["lock": .stringConvertible(key)]) }
        else { logger.warning("leadership lost", metadata: ["lock": .stringConvertible(key)]) }
        onChange(value)
    }

    private func run() async {
        var connection: PostgresConnection?
        var nextID = 1
        while !Task.isCancelled {
            do {
                let session: PostgresConnection
                if let connection, !connection.isClosed {
                    session = connection
                } else {
                    setLeading(nil)
                    let settings = self.settings, logger = self.logger, id = nextID
                    nextID += 1
                    // A session that opens after its deadline is closed at once, so it never holds the lock.
                    session = try await PostgresStore.withDeadline(openDeadline, "leader session", discard: { try? await $0.close() }) {
                        try await Self.open(settings, id: id, logger: logger)
                    }
                    connection = session
                }
                let key = self.key, logger = self.logger
                let started = ContinuousClock.now
                if confirmed.withLock({ $0 != nil }) {
                    try await PostgresStore.withDeadline(checkInterval, "leader check") {
                        for try await _ in try await session.query("SELECT 1", logger: logger) {}
                    }
                    setLeading(started)
                } else {
                    let taken = try await PostgresStore.withDeadline(checkInterval, "leader attempt") { () -> Bool in
                        var taken = false
                        for try await value in try await session.query("SELECT pg_try_advisory_lock(\(key))", logger: logger).decode(Bool.self) {
                            taken = value
                        }
                        return taken
                    }
                    if taken { setLeading(started) }
                }
            } catch {
                setLeading(nil)
                // Closing fails whatever is still in flight on the session (a query past its deadline), and the
                // server frees the lock with the session.
                if let open = connection { Self.close(open) }
                connection = nil
                if !(error is CancellationError) {
                    logger.info("leader lock check failed", metadata: ["error": .string("\(error)")])
                }
            }
            try? await Task.sleep(for: checkInterval)
        }
        setLeading(nil)
        if let connection { Self.close(connection) }
    }

    /// How long opening a session may take: connecting, authenticating and setting its TCP options.
    private var openDeadline: Duration { max(checkInterval * 4, .seconds(5)) }

    /// Closes `connection` without waiting for its close to complete: closing the socket is what ends the
    /// session, and the caller must not wait on a connection that may be stuck. (The completion holds the
    /// connection until it is closed: postgres-nio requires a connection closed before it is released.)
    private static func close(_ connection: PostgresConnection) {
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// A session whose end the server notices within a few seconds if this process or its host goes away.
    /// (Run under `openDeadline`; a connection it returns after that is closed by the caller's `discard`.)
    private static func open(_ settings: PostgresSettings, id: Int, logger: Logger) async throws -> PostgresConnection {
        let connection = try await PostgresConnection.connect(configuration: try settings.connectionConfiguration(), id: id, logger: logger)
        do {
            for setting in ["tcp_user_timeout = 3000", "tcp_keepalives_idle = 2", "tcp_keepalives_interval = 1",
                            "tcp_keepalives_count = 2"] {
                try await connection.query(PostgresQuery(unsafeSQL: "SET \(setting)"), logger: logger)
            }
        } catch {
            try? await connection.close()
            throw error
        }
        return connection
    }
}
