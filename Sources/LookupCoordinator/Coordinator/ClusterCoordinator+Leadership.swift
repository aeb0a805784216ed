import ClusterTransport
import Foundation
import LookupEngine

extension ClusterCoordinator {
    /// Whether this coordinator decides placement now. Every coordinator answers queries; only the leader
    /// plans and sends assigns and drops, the others follow the placement it stores.
    public var leadsPlacement: Bool { state.withLock { $0.leading } }

    /// One pass of the leadership loop (twice a second). A coordinator that has just become leader adopts the
    /// stored placement before it plans, so the new leader moves nothing the old one had placed and workers
    /// still hold; a follower adopts the stored placement on every pass and never plans. The leader also records
    /// the workers it sees, every few seconds.
    func steer() async {
        let store = options.desiredStore
        let leads = await store.leads()
        let was = state.withLock { $0.leading }
        if leads && !was {
            let stored: DesiredState?
            do { stored = try await store.load() } catch {
                logger.warning("cannot read the stored placement; not leading yet", metadata: ["error": .string("\(error)")])
                return
            }
            state.withLock { s in
                if let stored { Self.adopt(stored, into: &s) }
                s.leading = true
                s.planDirty = true
            }
            logger.notice("leading placement")
            count("callveil_cluster_leadership_changes_total", [("change", "gained")])
            reconcileAll()
        } else if !leads {
            if was {
                state.withLock { $0.leading = false }
                logger.warning("no longer leading placement; following the stored placement")
                count("callveil_cluster_leadership_changes_total", [("change", "lost")])
            }
            do {
                if let stored = try await store.load() { state.withLock { Self.adopt(stored, into: &$0) } }
            } catch {
                logger.debug("stored placement not read", metadata: ["error": .string("\(error)")])
            }
        }
        if leads {
            let due = state.withLock { s -> [String: Int]? in
                let now = ContinuousClock.now
                guard s.workersRecordedAt.map({ now - $0 >= .seconds(5) }) ?? true else { return nil }
                s.workersRecordedAt = now
                return s.workers.mapValues(\.actual.count)
            }
            if let due {
                do { try await store.recordWorkers(due) } catch {
                    logger.debug("worker registry not written", metadata: ["error": .string("\(error)")])
                }
            }
        }
    }

    /// Takes the stored placement as this coordinator's (entries for shards this coordinator has not installed
    /// are kept but unused until it does).
    static func adopt(_ stored: DesiredState, into s: inout State) {
        s.desired.placement = stored.placement
        s.desired.generation = max(s.desired.generation, stored.generation)
    }
}
