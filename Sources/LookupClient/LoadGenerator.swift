import Foundation
import PIR
import Synchronization

/// Drives a Live Caller ID Lookup server with simulated phones (SPEC-PIR §7.0): each phone has its own keys
/// (uploaded first), then looks up random present and absent numbers as an incoming call does, the block use
/// case and then the identity use case, and checks every decrypted answer against the truth.
public struct LoadGenerator: Sendable {
    /// How load is offered.
    public enum Mode: Sendable, Codable, Equatable {
        /// Each phone starts its next lookup when the previous one ends.
        case closed
        /// Lookups arrive at a fixed rate (per second) whatever the server does; latency counts from the arrival.
        case open(rate: Double)
    }

    /// What the answers must be.
    public struct Truth: Sendable {
        /// Present numbers with their block value and identity value (nil when the number has no identity row).
        public var present: [(number: String, block: [UInt8], identity: [UInt8]?)]
        /// Numbers in neither database.
        public var absent: [String]

        /// The truth.
        public init(present: [(number: String, block: [UInt8], identity: [UInt8]?)], absent: [String]) {
            self.present = present
            self.absent = absent
        }
    }

    /// The outcome of a run.
    public struct Result: Sendable, Codable {
        /// Lookups completed (each = one block and one identity request).
        public var lookups = 0
        /// Answers that differed from the truth.
        public var mismatches = 0
        /// Requests that failed.
        public var errors = 0
        /// First few problems, for the report.
        public var problems: [String] = []
        /// Per-request HTTP latency (seconds) of block and identity queries.
        public var blockLatencies: [Double] = []
        public var identityLatencies: [Double] = []
        /// Whole-lookup latency from arrival (open loop) or start (closed loop) to both answers decrypted.
        public var lookupLatencies: [Double] = []
        /// Wall time of the measured phase.
        public var seconds = 0.0
        /// Bytes sent and received for queries (all phones).
        public var queryBytesUp = 0, queryBytesDown = 0
        /// Size of one evaluation-key upload body per use case.
        public var keyUploadBytes = 0
        /// Setup time: config sync and key uploads of all phones.
        public var setupSeconds = 0.0
    }

    /// Server URL.
    public let url: String
    /// Use cases.
    public let blockUseCase: String, identityUseCase: String
    /// Phones and their user token (nil: no Privacy Pass).
    public let phones: Int
    public let userToken: String?
    /// Fraction of lookups for present numbers.
    public let presentFraction: Double

    /// A generator.
    public init(url: String, blockUseCase: String, identityUseCase: String, phones: Int, userToken: String?, presentFraction: Double = 0.8) {
        self.url = url
        self.blockUseCase = blockUseCase
        self.identityUseCase = identityUseCase
        self.phones = max(phones, 1)
        self.userToken = userToken
        self.presentFraction = presentFraction
    }

    /// Sets the phones up (config, keys) and warms them, calls `measuring`, then offers load for `duration`;
    /// `progress` gets a status line now and then.
    public func run(mode: Mode, duration: Duration, truth: Truth, seed: UInt64 = 1,
                    measuring: @Sendable () -> Void = {},
                    progress: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Result {
        let http = LookupHTTPClient(baseURL: url)
        let devices = (0..<phones).map { i -> LookupDevice in
            let auth: any AuthorizationProvider = userToken.map { PrivacyPassAuthorization(issuer: http, userToken: $0, batch: 8) } ?? NoAuthorization()
            return LookupDevice(http: http, userIdentifier: "bench-phone-\(seed)-\(i)", authorization: auth)
        }
        let setupStart = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for device in devices { group.addTask { try await device.syncConfig([blockUseCase, identityUseCase]) } }
            try await group.waitForAll()
        }
        // Warm-up, not measured: two lookups per phone (connections, tokens, the server's key caches).
        let warmup = ResultBox(Result())
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, device) in devices.enumerated() {
                group.addTask {
                    var rng = SplitMix64(seed: seed &+ 0xABCD &+ UInt64(i))
                    for _ in 0..<2 { await lookup(device, truth: truth, rng: &rng, arrival: .now, into: warmup) }
                }
            }
            try await group.waitForAll()
        }
        var result = Result()
        result.setupSeconds = seconds(ContinuousClock.now - setupStart)
        let warm = warmup.state.withLock { $0 }
        result.mismatches = warm.mismatches
        result.errors = warm.errors
        result.problems = warm.problems
        result.keyUploadBytes = await devices[0].lastKeyUploadBytes
        let sentBefore = await devices.asyncSum { await $0.bytesSent }
        let receivedBefore = await devices.asyncSum { await $0.bytesReceived }
        let shared = ResultBox(result)
        measuring()
        let start = ContinuousClock.now
        let deadline = start + duration
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(2))
                let r = shared.state.withLock { $0 }
                let elapsed = seconds(ContinuousClock.now - start)
                progress(String(format: "%.0f s: %d lookups (%.2f/s), %d mismatches, %d errors", elapsed, r.lookups,
                                Double(r.lookups) / max(elapsed, 0.001), r.mismatches, r.errors))
            }
        }
        defer { ticker.cancel() }
        switch mode {
        case .closed:
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (i, device) in devices.enumerated() {
                    group.addTask {
                        var rng = SplitMix64(seed: seed &* 1000 &+ UInt64(i))
                        while ContinuousClock.now < deadline {
                            await lookup(device, truth: truth, rng: &rng, arrival: .now, into: shared)
                        }
                    }
                }
                try await group.waitForAll()
            }
        case .open(let rate):
            let idle = DevicePool(devices)
            try await withThrowingTaskGroup(of: Void.self) { group in
                var index = 0
                while true {
                    let arrival = start + .nanoseconds(Int64(Double(index) / rate * 1e9))
                    guard arrival < deadline else { break }
                    try await Task.sleep(until: arrival)
                    let i = index
                    group.addTask {
                        let device = await idle.take()
                        var rng = SplitMix64(seed: seed &* 7919 &+ UInt64(i))
                        await lookup(device, truth: truth, rng: &rng, arrival: arrival, into: shared)
                        await idle.put(device)
                    }
                    index += 1
                }
                try await group.waitForAll()
            }
        }
        var final = shared.state.withLock { $0 }
        final.seconds = seconds(ContinuousClock.now - start)
        final.queryBytesUp = await devices.asyncSum { await $0.bytesSent } - sentBefore
        final.queryBytesDown = await devices.asyncSum { await $0.bytesReceived } - receivedBefore
        return final
    }

    private func lookup(_ device: LookupDevice, truth: Truth, rng: inout SplitMix64, arrival: ContinuousClock.Instant,
                        into shared: ResultBox) async {
        let present = truth.absent.isEmpty || Double(rng.next() % 10_000) / 10_000 < presentFraction
        let number: String
        let expected: (block: [UInt8]?, identity: [UInt8]?)
        if present, !truth.present.isEmpty {
            let row = truth.present[Int(rng.next() % UInt64(truth.present.count))]
            (number, expected) = (row.number, (row.block, row.identity))
        } else {
            (number, expected) = (truth.absent[Int(rng.next() % UInt64(truth.absent.count))], (nil, nil))
        }
        let keyword = Array(number.utf8)
        do {
            let block = try await device.lookup(keyword, in: blockUseCase)
            let blockLatency = seconds(await device.lastExchange)
            let identity = try await device.lookup(keyword, in: identityUseCase)
            let identityLatency = seconds(await device.lastExchange)
            let total = seconds(ContinuousClock.now - arrival)
            shared.state.withLock { r in
                r.lookups += 1
                r.blockLatencies.append(blockLatency)
                r.identityLatencies.append(identityLatency)
                r.lookupLatencies.append(total)
                if block != expected.block || identity != expected.identity {
                    r.mismatches += 1
                    if r.problems.count < 10 { r.problems.append("wrong answer for \(number)") }
                }
            }
        } catch {
            shared.state.withLock { r in
                r.errors += 1
                if r.problems.count < 10 { r.problems.append("\(number): \(error)") }
            }
        }
    }
}

/// The result being filled by concurrent lookups.
final class ResultBox: Sendable {
    let state: Mutex<LoadGenerator.Result>
    init(_ initial: LoadGenerator.Result) { state = Mutex(initial) }
}

/// Phones not busy with a lookup (open loop).
actor DevicePool {
    private var idle: [LookupDevice]
    private var waiters: [CheckedContinuation<LookupDevice, Never>] = []
    init(_ devices: [LookupDevice]) { idle = devices }
    func take() async -> LookupDevice {
        if let device = idle.popLast() { return device }
        return await withCheckedContinuation { waiters.append($0) }
    }
    func put(_ device: LookupDevice) {
        if waiters.isEmpty { idle.append(device) } else { waiters.removeFirst().resume(returning: device) }
    }
}

func seconds(_ d: Duration) -> Double {
    let (s, atto) = d.components
    return Double(s) + Double(atto) / 1e18
}

extension Array where Element == LookupDevice {
    func asyncSum(_ value: (LookupDevice) async -> Int) async -> Int {
        var total = 0
        for device in self { total += await value(device) }
        return total
    }
}
