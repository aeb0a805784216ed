import ArgumentParser
import Foundation
import Onboarding
import Hummingbird
import Logging
import LookupEngine
import LookupProtocol
import NIOCore
import ServiceCore
import ServiceLifecycle

/// `callveil canary`: a device lookup of a known number through the public path every few seconds, its
/// success, answer and latency exported for Prometheus: black-box monitoring of the whole chain (gateway, issuer,
/// coordinator, workers), the relay excluded.
struct CanaryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "canary",
        abstract: "Look a known number up like a device, every --interval seconds, and export the outcome as metrics.",
        discussion: """
            Each probe is a new device: Privacy Pass tokens, config sync, key upload and both lookups. A probe is ok \
            when the answers are the expected ones, wrong when they arrive but differ, failed when they do not \
            arrive within --timeout. Metrics: callveil_canary_up, callveil_canary_probes_total{result}, \
            callveil_canary_lookup_duration_seconds, callveil_canary_last_success_timestamp_seconds on \
            http://<metrics-host>:<metrics-port>/metrics.
            """)

    @Option(help: "The service's base URL (the target behind the gateway).")
    var url: String

    @OptionGroup var device: DeviceOptions

    @Option(help: "The number looked up (Apple's test identity by default).")
    var number: String = "+14085551212"

    @Option(help: "The name the identity answer must carry (empty: any answer).")
    var expectName: String = "Johnny Appleseed"

    @Option(help: "The block answer expected: blocked, not-blocked, or any.")
    var expectBlock: String = "any"

    @Option(help: "Seconds between probes.")
    var interval: Double = 30

    @Option(help: "Seconds a probe may take before it counts as failed.")
    var timeout: Double = 10

    @Option(help: "Probes to run before exiting (0: until SIGTERM).")
    var count: Int = 0

    @Option(help: "Metrics listener address.")
    var metricsHost: String = "127.0.0.1"

    @Option(help: "Metrics listener port (0 picks a free one).")
    var metricsPort: Int = 9093

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard interval >= 0.1, interval <= 86400 else { throw ValidationError("--interval must be in 0.1...86400 seconds") }
        guard timeout > 0, timeout <= 600 else { throw ValidationError("--timeout must be in (0, 600] seconds") }
        guard count >= 0 else { throw ValidationError("--count must not be negative") }
        guard (0...65535).contains(metricsPort) else { throw ValidationError("--metrics-port must be in 0...65535") }
        guard CanaryExpectation.Block(rawValue: expectBlock) != nil else {
            throw ValidationError("--expect-block must be blocked, not-blocked or any")
        }
    }

    func run() async throws {
        let logger = try logging.bootstrap()
        let metrics = ServiceMetrics()
        metrics.setBuildInfo(version: callveilVersion)
        let probe = DeviceProbe(device.settings(url: url, userAgent: "com.apple.ciphermld/1.0 iOS/18.2 callveil-canary"))
        let expectation = CanaryExpectation(name: expectName.isEmpty ? nil : expectName, block: .init(rawValue: expectBlock) ?? .any)
        let router = Router()
        AdminRoutes.addMetrics(to: router, metrics: metrics)
        let host = metricsHost, port = metricsPort
        let listener = ListenerService(Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: "CallVeil"),
                                                   onServerRunning: { channel in
                                                       logger.info("canary metrics", metadata: ["url": .string("http://\(host):\(channel.localAddress?.port ?? port)/metrics")])
                                                   }, logger: logger),
                                       listener: "metrics listener", host: host, port: port, logger: logger)
        let loop = CanaryLoop(probe: probe, number: number, expectation: expectation, interval: interval, timeout: timeout,
                              count: count, metrics: metrics, logger: logger)
        try await ServiceGroup(configuration: .init(services: [.init(service: listener), .init(service: loop, successTerminationBehavior: .gracefullyShutdownGroup)],
                                                    gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)).run()
        await probe.shutdown()
    }
}

/// What a canary answer must be.
struct CanaryExpectation: Sendable {
    /// The block answer expected.
    enum Block: String, Sendable {
        case blocked, notBlocked = "not-blocked", any
    }

    /// The identity's name, when one is expected.
    var name: String?
    var block: Block

    /// Why `answer` is not the expected one; nil when it is.
    func mismatch(_ answer: DeviceProbe.Answer) -> String? {
        switch block {
        case .blocked where answer.block != [1]: return "block answer is not 'blocked'"
        case .notBlocked where answer.block == [1]: return "block answer is 'blocked'"
        default: break
        }
        guard let name else { return nil }
        guard let bytes = answer.identity else { return "no identity answer" }
        guard let identity = try? CallIdentity(serializedBytes: bytes) else { return "the identity answer is not a CallIdentity" }
        return identity.name == name ? nil : "the identity answer carries another name"
    }
}

/// The canary's probes, one every `interval`, until cancelled or `count` are done.
struct CanaryLoop: Service {
    let probe: DeviceProbe
    let number: String
    let expectation: CanaryExpectation
    let interval: Double
    let timeout: Double
    let count: Int
    let metrics: ServiceMetrics
    let logger: Logger

    func run() async throws {
        var done = 0
        while !Task.isCancelled, count == 0 || done < count {
            let started = ContinuousClock.now
            let result = await probeOnce()
            done += 1
            metrics.increment("callveil_canary_probes_total", dimensions: [("result", result)])
            metrics.set("callveil_canary_up", result == "ok" ? 1 : 0)
            if result == "ok" {
                metrics.recordDuration("callveil_canary_lookup_duration_seconds", ContinuousClock.now - started)
                metrics.set("callveil_canary_last_success_timestamp_seconds", Date().timeIntervalSince1970)
            }
            if count != 0, done >= count { break }
            let next = started + .milliseconds(Int64(interval * 1000))
            do { try await Task.sleep(until: next, clock: .continuous) } catch { break }
        }
    }

    /// One probe: `ok`, `wrong` or `failed`.
    private func probeOnce() async -> String {
        let started = ContinuousClock.now
        do {
            let answer = try await withDeadline(seconds: timeout) { [probe, number] in
                try await probe.lookUp(number, device: try await probe.makeDevice())
            }
            if let why = expectation.mismatch(answer) {
                logger.error("canary answer wrong", metadata: ["why": .string(why)])
                return "wrong"
            }
            logger.debug("canary ok", metadata: ["seconds": .string(String(format: "%.3f", (ContinuousClock.now - started).seconds))])
            return "ok"
        } catch {
            logger.error("canary lookup failed", metadata: ["error": .string("\(error)")])
            return "failed"
        }
    }
}
