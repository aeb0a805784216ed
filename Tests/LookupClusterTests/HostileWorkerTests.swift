import ClusterTransport
import ConformanceSupport
import Foundation
import LookupCoordinator
import LookupProtocol
import LookupWorker
import PIR
import ServiceTestSupport
import Testing
import ZeroMQ

/// A member of the cluster sending garbage: random and mutated `ClusterMessage` frames, out-of-range fields,
/// replies for requests it was never sent, oversized frames. The coordinator (also the HTTP front door) must not
/// crash, and a good worker's queries keep being answered correctly.
@Suite("Hostile worker", .serialized)
struct HostileWorkerTests {
    /// Sends `count` hostile messages from a raw DEALER socket (this thread owns it).
    /// Returns how many were accepted by the socket (a full queue refuses some: the attacker's problem, not ours).
    static func attack(endpoint: String, context: ZMQContext, keys: CurveKeyPair, serverKey: String, seed: UInt64, count: Int) throws -> Int {
        var rng = SplitMix64(seed: seed)
        let socket = try ZMQSocket(context: context, kind: .dealer)
        defer { socket.close() }
        try socket.set(5, string: "evil")
        try keys.configureClient(socket, serverPublicKey: serverKey)
        try socket.connect(endpoint)
        func frame(_ message: ClusterMessage) -> [UInt8] { ClusterCodec.encode(message) }
        var sent = 0
        func emit(_ frames: [[UInt8]]) {
            if (try? socket.send(frames, dontWait: true)) != nil { sent += 1 } else { Thread.sleep(forTimeInterval: 0.001) }
        }
        var shard = ClusterShardRef()
        shard.usecase = DemoDataset.block
        shard.configID = Data([1, 2, 3])
        let templates: [ClusterMessage] = [
            .with { $0.hello = .with { $0.workerID = "evil"; $0.credit = UInt32.max; $0.incarnation = 1 } },
            .with { $0.hello = .with { $0.workerID = "good" } },  // claims another worker's id over another connection
            .with { $0.requestID = 1; $0.reply = .with { $0.errorMessage = String(repeating: "x", count: 10_000) } },
            .with { $0.transferRequest = .with { $0.shard = shard; $0.offset = UInt64.max } },
            .with { $0.transferRequest = .with { $0.shard = shard; $0.offset = 1 << 63 } },
            .with { $0.loaded = .with { $0.shard = shard; $0.ok = false; $0.error = String(repeating: "e", count: 5000) } },
            .with { $0.keyRequest = .with { $0.user = String(repeating: "u", count: 5000) } },
            .with { $0.hello = .with { $0.workerID = "evil"; $0.incarnation = 2; $0.loaded = [shard] } },
            .with { $0.hello = .with { $0.workerID = "evil"; $0.incarnation = 2; $0.transfers = [.with { $0.shard = shard; $0.offset = 9; $0.totalBytes = 3 }] } },
            .with { $0.goodbye = .init() },
        ]
        for i in 0..<count {
            var message = templates[Int(rng.next() % UInt64(templates.count))]
            switch i % 6 {
            case 0:  // random bytes
                emit([(0..<Int(rng.next() % 300)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }])
                continue
            case 1:  // a valid message with bytes flipped
                var bytes = frame(message)
                if !bytes.isEmpty { bytes[Int(rng.next() % UInt64(bytes.count))] ^= UInt8(truncatingIfNeeded: rng.next() | 1) }
                emit([bytes])
                continue
            case 2:  // a reply with an unknown error code to a guessed request id
                message = .with {
                    $0.requestID = rng.next()
                    $0.reply = .with { $0.errorCode = .UNRECOGNIZED(Int(truncatingIfNeeded: rng.next() % 100_000)); $0.errorMessage = "x" }
                }
            case 3:  // extra frames
                emit([frame(message), frame(message)])
                continue
            default: break
            }
            emit([frame(message)])
        }
        // An oversized frame: ZeroMQ drops the connection (ZMQ_MAXMSGSIZE) before it reaches the coordinator.
        emit([[UInt8](repeating: 7, count: ClusterLimits.maxFrameBytes + 1)])
        Thread.sleep(forTimeInterval: 0.3)
        return sent
    }

    @Test("Random and mutated frames from an admitted connection: no crash, other queries unaffected")
    func hostileFrames() async throws {
        let seed = TestRandom().seed  // printed; CALLVEIL_SEED replays it
        // Both are admitted (CURVE): the attacker is a member of the cluster, identified by its key as "evil".
        let server = try CurveKeyPair.generate(), goodKeys = try CurveKeyPair.generate(), evilKeys = try CurveKeyPair.generate()
        let cluster = try await ClusterTests.start(replication: 1, curve: (server, [goodKeys.publicKey: "good", evilKeys.publicKey: "evil"]), count: 60)
        let good = try cluster.worker("good", keys: goodKeys, serverKey: server.publicKey)
        #expect(await cluster.coordinator.waitUntilConverged(timeout: .seconds(30)))
        let device = cluster.server.device()
        try await device.syncConfig([DemoDataset.block])
        let endpoint = cluster.coordinator.endpoint, context = cluster.context
        let attacker = Task.detached {
            try HostileWorkerTests.attack(endpoint: endpoint, context: context, keys: evilKeys, serverKey: server.publicKey, seed: seed, count: 3000)
        }
        #expect(try await device.wrongBlockAnswers(cluster.data.records.prefix(8)) == [])
        var checked = 8
        let sent = try await attacker.value
        #expect(sent > 100)
        // The impostor never took over "good"'s shards, and queries still route to the real one.
        #expect(await cluster.coordinator.waitUntilConverged(timeout: .seconds(10)))
        #expect(try await device.wrongBlockAnswers(cluster.data.records.suffix(4)) == [])
        checked += 4
        print("hostile worker: \(sent) of 3000 hostile messages sent, \(checked) good answers checked")
        good.stop()
        await cluster.stop()
    }
}
