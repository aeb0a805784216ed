import ClusterTransport
import Foundation
import FuzzSupport
import LookupCoordinator
import LookupEngine
import LookupService
import LookupStorage
import LookupWorker
import Synchronization
import ZeroMQ

/// Cluster frames from a peer nobody vetted: the first byte picks the receiver. Even: the rest is a frame a
/// worker sent the coordinator (`[routing id, payload]`); odd: a frame the coordinator sent a worker. Both run for
/// real over `inproc://` with the fixture's use case loaded on the worker, so hellos, replies, key fetches,
/// transfer requests, assigns, chunks and drops reach live state.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    Seeds.writeIfRequested {
        _ = try SeedRecorder.record(server: cluster.server)
        Thread.sleep(forTimeInterval: 1)  // a couple of heartbeats
        var seeds: [String: [UInt8]] = [:]
        for (index, message) in recorded.withLock({ $0 }).enumerated() {
            guard let body = message.body else { continue }
            let name = "\(body)".split(separator: "(").first.map(String.init) ?? "message"
            let toWorker: Bool
            switch body {
            case .query, .keyReply, .keyPush, .assign, .chunk, .drop, .cancel: toWorker = true
            default: toWorker = false
            }
            guard seeds.keys.filter({ $0.hasPrefix(name) }).count < 3 else { continue }
            seeds["\(name)-\(index)"] = [toWorker ? 1 : 0] + ClusterCodec.encode(message)
        }
        return seeds
    }
    withoutLeakChecks { _ = cluster }
    return 0
}

let recorded = Mutex<[ClusterMessage]>([])

let cluster: (server: LookupServer, coordinator: ClusterCoordinator, worker: ClusterWorker) = {
    let endpoint = "inproc://callveil-fuzz"
    let recording = Seeds.requestedDirectory != nil
    let faults = LinkFaults(dropRate: 0, seed: 0) { message in
        if recording { recorded.withLock { $0.append(message) } }
    }
    do {
        let context = try ZMQContext()
        let path = Fixture.prepared
        let server = try blocking {
            try await LookupServer(configPath: path, pool: nil, metrics: nil, makeExecutor: { environment in
                var options = ClusterCoordinator.Options(bind: endpoint)
                options.replication = 1
                options.faults = faults
                return try ClusterCoordinator(context: context, options: options, keyStore: environment.keyStore, logger: Fixture.logger)
            }, logger: Fixture.logger)
        }.get()
        var options = ClusterWorker.Options(coordinator: endpoint, dataDirectory: "\(Fixture.directory)/worker", workerID: "fuzz-worker")
        options.threads = 1
        options.faults = faults
        let worker = try ClusterWorker(context: context, options: options, logger: Fixture.logger)
        let coordinator = server.executor as! ClusterCoordinator
        _ = blocking { await coordinator.waitUntilBalanced(workerCount: 1, timeout: .seconds(60)) }
        return (server, coordinator, worker)
    } catch {
        fatalError("the fuzz cluster could not start: \(error)")
    }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = input(start, count)
    guard let selector = bytes.first else { return 0 }
    let payload = Array(bytes.dropFirst())
    if selector % 2 == 0 {
        cluster.coordinator.receive([Array("fuzz-peer".utf8), payload], userID: nil)
    } else {
        let worker = cluster.worker
        _ = blocking { await worker.deliver([payload]) }
    }
    return 0
}
