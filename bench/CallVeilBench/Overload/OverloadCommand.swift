import ArgumentParser
import AsyncHTTPClient
import Foundation
import LoadGeneration
import LookupClient
import NIOCore
import Synchronization

/// `callveil-bench overload` (`make overload`): overload and hostile input against a running server, with a checked
/// phone. It measures the server's query capacity, then for `--flood-seconds` runs at once (a) slow connections
/// sending a byte a second, (b) 10 MiB `/key` uploads from ever-new User-Identifiers, (c) valid `/queries` at
/// `--flood-factor` × capacity, while one well-behaved phone keeps looking numbers up (every answer decrypted and
/// checked). It prints what each source got and fails unless the server stayed up within its RSS bound, the
/// phone's answers were all right with its p99 within bound, every refusal carried `Retry-After`, and the phone
/// was back to its baseline latency (`PhoneRecovery`) within `--recovery-limit` seconds of the flood's end.
struct OverloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "overload",
        abstract: "Flood a running server (slow connections, 10 MiB key uploads, 4× query capacity) while a phone checks its answers.")

    @Option(help: "The server's base URL.") var url: String
    @Option(help: "The dataset directory it serves (its identities.csv is the truth).") var dataset: String
    @Option(help: "The server's process id, for its RSS.") var pid: Int32
    @Option(help: "The server's admin URL, for /healthz at the end.") var adminURL: String?
    @Option(help: "Slow connections.") var slowConnections = 500
    @Option(help: "Concurrent /key uploaders.") var keyUploaders = 16
    @Option(help: "Size of each /key upload, MiB.") var keyUploadMegabytes = 10
    @Option(help: "Query flood rate as a multiple of the measured capacity.") var floodFactor = 4.0
    @Option(help: "Identities (User-Identifiers) the query flood comes from: few exceed the per-identity limit (429), many reach the fair gate's queue (503).")
    var floodDevices = 8

    func validate() throws {
        guard (1...1024).contains(floodDevices) else { throw ValidationError("--flood-devices must be in 1...1024") }
        guard (0...1).contains(minServedShare) else { throw ValidationError("--min-served-share must be in 0...1") }
    }
    @Option(help: "Seconds of capacity measurement.") var capacitySeconds = 8.0
    @Option(help: "Seconds of the phone alone before the flood.") var baselineSeconds = 10.0
    @Option(help: "Seconds of flood (longer than the server's request timeout, so that its closing of slow connections shows).")
    var floodSeconds = 40.0
    @Option(help: "The server's http.requestTimeoutSeconds: every slow connection must be closed by then.") var requestTimeout = 30.0
    @Option(help: "Seconds of the phone alone after the flood.") var recoverySeconds = 15.0
    /// A flood of keys the server accepts can fill the demo config's 512 MiB parsed-key cache and its 256 MiB body
    /// budget over a base of about 260 MiB: peaks of 837 to 1,517 MiB were measured on 2026-11-26 while the 10 MiB
    /// uploads were read, and 232 to 305 MiB since they are refused from their declared length. The bound catches
    /// growth that no limit holds; it does not measure the service's footprint.
    @Option(help: "Bound on the server's RSS, MiB.") var rssLimit = 2048
    @Option(help: "Bound on the phone's p99 lookup latency during the flood, seconds.") var p99Limit = 6.0
    @Option(help: "Seconds after the flood within which the phone must be back to baseline latency.") var recoveryLimit = 10.0
    @Option(help: "Least share of the queries answered during the flood that the phone must get, as a fraction of an equal split among the identities asking (whatever the server's speed).")
    var minServedShare = 0.5
    @Option(help: "Write the phone's lookups (start and latency in seconds from its start, retries) to this CSV file.")
    var timeline: String?
    @Option(help: "User token of the phone.") var userToken = "AAAA"
    @Option(help: "User token of the /queries flood.") var floodToken = "BBBB"
    @Option(help: "User token of the /key flood (its own, so that the query flood's issuance limit does not throttle it).")
    var keyToken = "CCCC"
    @Option(help: "Block use case.") var block = "net.example.lookup.block"
    @Option(help: "Identity use case.") var identity = "net.example.lookup.identity"
    @Option(help: "Random seed.") var seed: UInt64 = 1

    func run() async throws {
        print("overload run: seed \(seed) (--seed to replay)")
        let truth = try BenchDataset.truth(csv: "\(dataset)/identities.csv", acceptEither: nil, convergedMarker: nil, seed: seed)
        guard let port = URL(string: url)?.port else { throw ValidationError("--url needs a port") }
        let rss = PeakSampler(pid: pid)
        rss.start()
        func pool(_ connections: Int, group: any EventLoopGroup = HTTPClient.defaultEventLoopGroup) -> HTTPClient {
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)
            return HTTPClient(eventLoopGroup: group, configuration: configuration)
        }
        let adminClient = pool(2), capacityClient = pool(8), floodClient = pool(256), keyClient = pool(keyUploaders + 4)
        let clients = [adminClient, capacityClient, floodClient, keyClient]
        do {
            try await measure(truth: truth, port: port, rss: rss, clients: clients)
        } catch {
            for client in clients { try? await client.shutdown() }
            throw error
        }
        for client in clients { try? await client.shutdown() }
    }

    private func measure(truth: LoadGenerator.Truth, port: Int, rss: PeakSampler, clients: [HTTPClient]) async throws {
        let (adminClient, capacityClient, floodClient, keyClient) = (clients[0], clients[1], clients[2], clients[3])

        // Capacity: 4 devices back to back on the block use case.
        let capacityHTTP = LookupHTTPClient(baseURL: url, client: capacityClient)
        let capacityDevices = try await devices(4, prefix: "capacity", http: capacityHTTP, token: userToken)
        let numbers = truth.present.prefix(64).map(\.number)
        let counted = StatusTally()
        let block = self.block
        let capacityEnd = ContinuousClock.now + .milliseconds(Int64(capacitySeconds * 1000))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, device) in capacityDevices.enumerated() {
                group.addTask {
                    var n = i
                    while ContinuousClock.now < capacityEnd {
                        do {
                            _ = try await device.lookup(Array(numbers[n % numbers.count].utf8), in: block)
                            counted.add("200")
                        } catch let error as LookupClientError where error.code == .unavailable && error.retryAfter != nil {
                            try await Task.sleep(for: .seconds(min(error.retryAfter ?? 1, 2)))
                        }
                        n += 4
                    }
                }
            }
            try await group.waitForAll()
        }
        let capacity = Double(counted.total) / capacitySeconds
        print(String(format: "measured capacity: %.1f queries/s (4 devices back to back, %.0f s)", capacity, capacitySeconds))

        // The flood's identities, their queries encrypted and their tokens minted now, before the phone starts: the
        // flood measures the server's handling of valid queries, not its token issuer or the load tool (issuance is
        // bounded per user token by the tier's `issuePerSecond`).
        let floodHTTP = LookupHTTPClient(baseURL: url, client: floodClient)
        let rate = capacity * floodFactor
        let floodDevices = try await devices(self.floodDevices, prefix: "flood", http: floodHTTP, token: floodToken,
                                             stock: Int(rate * floodSeconds / Double(self.floodDevices) * 1.1) + 16)
        var bodies: [[UInt8]] = []
        for (i, device) in floodDevices.enumerated() {
            bodies.append(try await device.queryRequest(Array(numbers[i % numbers.count].utf8), in: block).serializedBytes())
        }
        let keyBody = try await floodDevices[0].freshKeyUpload(for: block)

        // The phone, from now to the end, in a process of its own (`OverloadPhoneCommand`): a phone is a device of
        // its own, and in this process its encryption would wait behind the flood's client work.
        let phone = try await PhoneProcess(arguments: ["--url", url, "--dataset", dataset, "--user-token", userToken,
                                                       "--block", block, "--identity", identity, "--seed", String(seed)])
        let origin = ContinuousClock.now
        let cpuAtStart = GatewayBenchCommand.cpuSeconds(pid)
        try await Task.sleep(for: .milliseconds(Int64(baselineSeconds * 1000)))
        let baselineRSS = rss.peak

        // The flood.
        let scraper = adminURL.map { WorkloadMetrics($0 + "/metrics") }
        let stagesBefore = try? await scraper?.scrape()
        let cpuBefore = GatewayBenchCommand.cpuSeconds(pid)
        let floodStart = ContinuousClock.now - origin
        print(String(format: "flood from t=%.1f s for %.0f s: %d slow connections, %d × %d MiB key uploaders, queries at %.1f/s",
                     floodStart.seconds, floodSeconds, slowConnections, keyUploaders, keyUploadMegabytes, capacity * floodFactor))
        let slow = SlowConnections(port: port, count: slowConnections)
        slow.start()
        let floodStop = Mutex(false)
        let stopFlood: @Sendable () -> Bool = { floodStop.withLock { $0 } }
        let queryTally = StatusTally(), keyTally = StatusTally()
        let queryTask = Task {
            await OverloadFlood.queries(devices: floodDevices, bodies: bodies, rate: rate, maxOutstanding: 512, tally: queryTally, stop: stopFlood)
        }
        let keyTask = Task {
            await OverloadFlood.keys(http: LookupHTTPClient(baseURL: url, client: keyClient), userToken: keyToken, keyBody: keyBody,
                                     uploadBytes: keyUploadMegabytes << 20, concurrency: keyUploaders, tally: keyTally, stop: stopFlood)
        }
        try await Task.sleep(for: .milliseconds(Int64(floodSeconds * 1000)))
        floodStop.withLock { $0 = true }
        let floodEnd = ContinuousClock.now - origin
        let stagesAfter = try? await scraper?.scrape()
        let cpuAtFloodEnd = GatewayBenchCommand.cpuSeconds(pid)
        let floodCPU = cpuAtFloodEnd.flatMap { after in cpuBefore.map { after - $0 } }
        slow.stop()
        let floodRSS = rss.peak
        // Recovery: the phone alone again (the flood's requests still in flight drain meanwhile).
        try await Task.sleep(for: .milliseconds(Int64(recoverySeconds * 1000)))
        let cpuAtEnd = GatewayBenchCommand.cpuSeconds(pid)
        let report = try await phone.finish()
        let phoneTally = StatusTally()
        for (outcome, count) in report.outcomes { phoneTally.add(outcome, count: count) }
        await queryTask.value
        await keyTask.value
        rss.stop()

        // Verdicts.
        let lookups = report.lookups
        if let timeline {
            let rows = ["start,latency,retries,token_seconds"]
                + lookups.map { String(format: "%.3f,%.3f,%d,%.3f", $0.start, $0.latency, $0.retries, $0.tokenSeconds) }
            try (rows.joined(separator: "\n") + "\n").write(toFile: timeline, atomically: true, encoding: .utf8)
            print(String(format: "timeline: %@ (flood from %.1f s to %.1f s)", timeline, floodStart.seconds, floodEnd.seconds))
        }
        let baseline = lookups.filter { $0.start < floodStart.seconds }
        let during = lookups.filter { $0.start >= floodStart.seconds && $0.start < floodEnd.seconds }
        let after = lookups.filter { $0.start >= floodEnd.seconds }
        let baseP99 = BenchReport.percentile(baseline.map(\.latency), 0.99)
        let threshold = max(2 * baseP99, baseP99 + 0.05)
        // Recovered once no run of five lookups has its median over the threshold (a backlog), lone slow ones aside.
        let recoveredAt = PhoneRecovery.recoveredAt(after.map { (start: $0.start, latency: $0.latency) }, threshold: threshold)
        let recovery = max(0, recoveredAt - floodEnd.seconds)
        let lateAfter = after.filter { $0.start >= recoveredAt && $0.latency > threshold }.count
        let alive = kill(pid, 0) == 0
        var healthy = true
        if let adminURL {
            healthy = (try? await LookupHTTPClient(baseURL: adminURL, client: adminClient).send(method: .GET, path: "/healthz", headers: [], body: nil).status) == 200
        }
        let slowTally = slow.tally
        let withoutRetryAfter = [phoneTally, queryTally, keyTally].flatMap { $0.snapshot.filter { $0.key.contains("without Retry-After") }.map(\.value) }.reduce(0, +)

        func row(_ name: String, _ tally: StatusTally) -> String {
            "| \(name) | \(tally.total) | \(tally.summary) |"
        }
        print("")
        print("| source | requests | what it got |")
        print("|---|---:|---|")
        print(row("phone (checked, own process)", phoneTally))
        print(row(String(format: "/queries flood (%.1f/s)", rate), queryTally))
        print(row("/key flood (\(keyUploadMegabytes) MiB each, \(keyUploaders) at once)", keyTally))
        print("| slow connections (\(slowConnections), 1 byte/s) | \(slowTally.opened) opened | closed by the server: \(slowTally.closedByServer), refused: \(slowTally.refused), bytes sent: \(slowTally.bytesSent) |")
        print("")
        print("| phase | phone lookups | lookups/s | p50 | p99 | max | server RSS peak |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        func phase(_ name: String, _ set: [OverloadPhone.Lookup], _ seconds: Double, _ peak: Int) {
            let l = set.map(\.latency)
            print(String(format: "| %@ | %d | %.2f | %.3f s | %.3f s | %.3f s | %d MiB |", name, set.count, Double(set.count) / max(seconds, 0.001),
                         BenchReport.percentile(l, 0.5), BenchReport.percentile(l, 0.99), l.max() ?? 0, peak >> 20))
        }
        phase("baseline", baseline, floodStart.seconds, baselineRSS)
        phase("flood", during, floodSeconds, floodRSS)
        phase("recovery", after, recoverySeconds, rss.peak)
        print("")
        // The phone's fair share: the measured capacity split among the identities asking (the flood's and the
        // phone's), a lookup being two requests; goodput: the requests answered 200 during the flood, all sources.
        let identities = Double(floodDevices.count + 1)
        let fairLookups = capacity / identities / 2
        let phoneShare = Double(during.count) / floodSeconds / fairLookups
        let answered = Double(queryTally.snapshot["200"] ?? 0) + 2 * Double(during.count)
        let goodput = answered / floodSeconds / capacity
        print(String(format: "phone's fair share during the flood: %.2f lookups/s (capacity over %.0f identities); it got %.2f/s, %.0f%%",
                     fairLookups, identities, Double(during.count) / floodSeconds, 100 * phoneShare))
        print(String(format: "goodput during the flood: %.1f queries/s answered 200, %.0f%% of the measured capacity", answered / floodSeconds, 100 * goodput))
        // The phone's share of what was answered, against an equal split among the identities: unlike the share of
        // the capacity measured before the flood, it does not move with the server's speed under the flood, so a
        // phone starved by the order of turns fails on any machine.
        let servedShare = answered > 0 ? 2 * Double(during.count) / (answered / identities) : 0
        print(String(format: "phone's share of the queries answered during the flood: %.0f%% of an equal split among %.0f identities (bound %.0f%%)",
                     100 * servedShare, identities, 100 * minServedShare))
        if let floodCPU {
            print(String(format: "server CPU during the flood: %.1f s in %.0f s (%.0f%% of one core)", floodCPU, floodSeconds,
                         100 * floodCPU / floodSeconds))
        }
        // The server's CPU per phone lookup with the phone alone, before and after the flood (after: with the
        // flood's last requests draining): equal figures with a slower phone point at the machine, not the server.
        if let cpuAtStart, let cpuBefore, let cpuAtFloodEnd, let cpuAtEnd, !baseline.isEmpty, !after.isEmpty {
            print(String(format: "server CPU per phone lookup: %.1f ms before the flood, %.1f ms after it",
                         1000 * (cpuBefore - cpuAtStart) / Double(baseline.count), 1000 * (cpuAtEnd - cpuAtFloodEnd) / Double(after.count)))
        }
        if let stagesBefore, let stagesAfter {
            // Where the flood's time went, all sources together: the stage histograms' difference over the flood.
            print("| stage (during the flood, every source) | count | mean ms | p99 ≤ ms |")
            print("|---|---:|---:|---:|")
            for s in WorkloadMetrics.stages(before: stagesBefore, after: stagesAfter) {
                print(String(format: "| %@ | %.0f | %.1f | %@ |", s.stage, s.count, s.mean * 1000, s.p99.isInfinite ? "∞" : String(format: "%.0f", s.p99 * 1000)))
            }
            print("")
            // What the server answered during the flood, by route and status, and why the fair gate refused.
            let counters = stagesAfter.keys.filter { $0.hasPrefix("callveil_http_requests_total{") || $0.hasPrefix("callveil_admission_refusals_total{") }
            let deltas = counters.sorted().compactMap { key -> String? in
                let delta = (stagesAfter[key] ?? 0) - (stagesBefore[key] ?? 0)
                return delta > 0 ? "\(key.replacingOccurrences(of: "callveil_", with: "")): \(Int(delta))" : nil
            }
            print("server counters during the flood: " + deltas.joined(separator: ", "))
            print("")
        }
        let floodP99 = BenchReport.percentile(during.map(\.latency), 0.99)
        var failures: [String] = []
        if !alive { failures.append("the server process is gone") }
        if !healthy { failures.append("/healthz did not answer 200 after the flood") }
        if rss.peak >> 20 > rssLimit { failures.append("server RSS peaked at \(rss.peak >> 20) MiB > \(rssLimit) MiB") }
        if !report.wrongAnswers.isEmpty { failures.append("the phone got \(report.wrongAnswers.count) wrong answers") }
        if report.failures > 0 { failures.append("\(report.failures) phone lookups failed") }
        if baseline.isEmpty { failures.append("the phone completed no lookup before the flood") }
        if during.isEmpty { failures.append("the phone completed no lookup during the flood") }
        if floodP99 > p99Limit { failures.append(String(format: "phone p99 during the flood %.3f s > %.1f s", floodP99, p99Limit)) }
        if servedShare < minServedShare {
            failures.append(String(format: "the phone got %.0f%% of an equal split of the queries answered during the flood < %.0f%%", 100 * servedShare, 100 * minServedShare))
        }
        if withoutRetryAfter > 0 { failures.append("\(withoutRetryAfter) refusals without Retry-After") }
        if (queryTally.snapshot["503 + Retry-After"] ?? 0) + (queryTally.snapshot["429 + Retry-After"] ?? 0) == 0 {
            failures.append("the query flood was never shed (no 503/429): it did not overload the server")
        }
        if slowConnections > 0, floodSeconds > requestTimeout + 5, slowTally.closedByServer < slowConnections {
            failures.append("the server closed \(slowTally.closedByServer) of \(slowConnections) slow connections within \(Int(floodSeconds)) s (request timeout \(Int(requestTimeout)) s)")
        }
        if recovery > recoveryLimit { failures.append(String(format: "back to baseline latency %.1f s after the flood > %.1f s", recovery, recoveryLimit)) }
        print(String(format: "recovery: phone back within %.3f s (2 × baseline p99, median of every 5 lookups) %.2f s after the flood ended, %d lone lookups over it since; RSS peak %d MiB (bound %d); p99 during flood %.3f s (bound %.1f)",
                     threshold, recovery, lateAfter, rss.peak >> 20, rssLimit, floodP99, p99Limit))
        if failures.isEmpty {
            print("PASS: the server stayed up, the phone's \(lookups.count) lookups were all right, the excess was shed with Retry-After")
        } else {
            for failure in failures { print("FAIL: \(failure)") }
            throw ExitCode(1)
        }
    }

    /// `count` devices synced to the block use case, each holding `stock` tokens.
    private func devices(_ count: Int, prefix: String, http: LookupHTTPClient, token: String, stock: Int = 0) async throws -> [LookupDevice] {
        var out: [LookupDevice] = []
        for i in 0..<count {
            let tokens = PrivacyPassAuthorization(issuer: http, userToken: token, batch: 16)
            let device = LookupDevice(http: http, userIdentifier: "overload-\(prefix)-\(seed)-\(i)", authorization: tokens)
            try await device.syncConfig([block])
            try await tokens.stock(stock)
            out.append(device)
        }
        return out
    }
}
