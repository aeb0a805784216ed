import ArgumentParser
import Foundation
import PIR

/// `callveil-bench workload replay`: sends the next unused prepared calls, open-loop (Poisson arrivals at
/// `--rate` calls per second, latency counted from each arrival) or closed-loop (`--concurrency` callers, for
/// capacity), each call's use cases at once as a ringing phone asks them. Writes every answer for `check` and prints
/// latency, refusals, goodput, the tool's own CPU, the server's CPU (`--server-pid`) and, from the server's
/// metrics (`--metrics`), where a lookup's time went.
struct WorkloadReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "replay", abstract: "Replay prepared calls against the service.")

    @OptionGroup var target: WorkloadTarget
    @Option(help: "Open loop: calls per second (Poisson arrivals).") var rate: Double?
    @Option(help: "Closed loop: callers, each starting its next call when the last ends (after the Retry-After of a refusal).")
    var concurrency: Int?
    @Flag(help: "Closed loop: a refused caller places its next call at once instead of waiting out Retry-After.")
    var ignoreRetryAfter = false
    @Option(help: "Seconds to run.") var duration = 60.0
    @Option(help: "Name of this run (results-NAME.bin and .json).") var label = "run"
    @Option(help: "The service's process id, for its CPU per request.") var serverPid: Int32?
    @Option(help: "The service's metrics URL (e.g. http://127.0.0.1:9090/metrics), for the stage table.") var metrics: String?
    @Option(help: "Seed of the arrival times.") var seed: UInt64 = 1
    @Option(help: "Open loop: seconds more after --duration at --after-rate, to see how soon latency recovers after a flood.")
    var afterSeconds = 0.0
    @Option(help: "Calls per second during --after-seconds.") var afterRate: Double?
    @Option(help: "Recovered from when the calls arriving after --duration have their p99 within this many ms (e.g. the 70%-load p99).")
    var recoveredP99: Double?
    @Option(help: "The run (its --label) whose latency --after-seconds is compared with, window by window, besides --recovered-p99.")
    var recoveryBaseline: String?

    func run() async throws {
        guard (rate == nil) != (concurrency == nil) else { throw ValidationError("give --rate or --concurrency") }
        guard afterSeconds == 0 || (rate != nil && afterRate != nil && recoveredP99 != nil) else {
            throw ValidationError("--after-seconds needs --rate, --after-rate and --recovered-p99")
        }
        let manifest = try WorkloadManifest.load(target.dir)
        let phones = try WorkloadPhone.load(target.dir)
        let cursor = WorkloadCursor.load(target.dir)
        let calls = Array(try WorkloadCall.load(target.dir).dropFirst(cursor))
        let needed = Int(((rate ?? 0) * duration + (afterRate ?? 0) * afterSeconds) * 1.2) + 50
        if rate != nil, calls.count < needed {
            throw WorkloadError("\(calls.count) unused calls left, about \(needed) needed: prepare more")
        }
        let transport = try target.transport(manifest)
        let scraper = metrics.map(WorkloadMetrics.init)
        let before = try await scraper?.scrape()
        let serverBefore = serverPid.flatMap(GatewayBenchCommand.cpuSeconds)
        let toolBefore = WorkloadCPU.selfSeconds()
        let recorder = WorkloadRecorder()
        let start = ContinuousClock.now
        if let rate {
            await openLoop(calls, phones: phones, rate: rate, transport: transport, recorder: recorder, start: start)
        } else {
            await closedLoop(calls, phones: phones, callers: concurrency!, honourRetryAfter: !ignoreRetryAfter, transport: transport,
                             recorder: recorder, start: start)
        }
        let used = recorder.callsPlaced
        let elapsed = (ContinuousClock.now - start).seconds
        let toolCPU = WorkloadCPU.selfSeconds() - toolBefore
        let serverCPU = serverBefore.flatMap { b in serverPid.flatMap(GatewayBenchCommand.cpuSeconds).map { $0 - b } }
        let after = try await scraper?.scrape()
        await transport.shutdown()
        try WorkloadCursor.save(cursor + used, to: target.dir)
        let all = recorder.results
        try WorkloadResult.save(all, firstCall: cursor, to: "\(target.dir)/results-\(label).bin")
        // With a window after the flood, the summary is the flood's (calls arriving within --duration).
        let results = afterSeconds > 0 ? all.filter { $0.arrival < duration } : all
        // CPU per request is over every request of the run, the window after the flood's too.
        let share = Double(results.count) / Double(max(all.count, 1))
        let summary = WorkloadSummary(label: label, results: results, callsSent: afterSeconds > 0 ? Set(results.map(\.call)).count : used,
                                      seconds: afterSeconds > 0 ? duration : elapsed, toolCPU: toolCPU * share,
                                      toolLag: recorder.lagP99, serverCPU: serverCPU.map { $0 * share }, stages: before.flatMap { b in after.map { WorkloadMetrics.stages(before: b, after: $0) } } ?? [],
                                      keyCache: before.flatMap { b in after.map { WorkloadMetrics.keyCache(before: b, after: $0) } },
                                      gateRefusals: before.flatMap { b in after.map { WorkloadMetrics.gateRefusals(before: b, after: $0) } })
        try summary.writeResultsJSON(to: "\(target.dir)/results-\(label).json")
        print(summary.markdown)
        // Refusals spread over the run are a load the gate turns away; refusals bunched in a second or two are a
        // stall of the server: say which.
        let refusedBySecond = Dictionary(grouping: results.filter { $0.status != 200 }) { Int($0.arrival.rounded(.down)) }
        if !refusedBySecond.isEmpty {
            print("refused requests by the second of their arrival: "
                  + refusedBySecond.sorted { $0.key < $1.key }.map { "\($0.key) s: \($0.value.count)" }.joined(separator: ", "))
        }
        if afterSeconds > 0, let afterRate, let recoveredP99 {
            let baseline = try recoveryBaseline.map { try WorkloadResult.load("\(target.dir)/results-\($0).bin") } ?? []
            let recovery = WorkloadRecovery(results: all, floodEnd: duration, threshold: recoveredP99 / 1000, baseline: baseline)
            print(String(format: "after the flood (%.1f calls/s for %.0f s): %d calls, p99 %.1f ms, %d refused; ", afterRate, afterSeconds,
                         recovery.calls, recovery.p99 * 1000, recovery.refused)
                  + (recovery.recoveredAfter.map { String(format: "calls arriving %.1f s after the flood ended or later: p99 within %.1f ms", $0, recoveredP99) }
                     ?? String(format: "p99 not back within %.1f ms in the window", recoveredP99)))
            if let baselineLabel = recoveryBaseline, !recovery.baselineWindowP99s.isEmpty {
                let windows = recovery.baselineWindowP99s.sorted()
                print(String(format: "calls arriving %.0f s after the flood's end or later: p99 %.1f ms; ", recovery.settle, recovery.p99Settled * 1000)
                      + "the \(baselineLabel) run's own p99 over its \(windows.count) windows of that length, one after another: "
                      + String(format: "%.1f-%.1f ms (median %.1f): ", windows[0] * 1000, windows[windows.count - 1] * 1000,
                               BenchReport.percentile(windows, 0.5) * 1000)
                      + (recovery.p99Settled <= windows[windows.count - 1] ? "within the load's own variation" : "above every window of the load"))
            }
            print("per second from the flood's end (calls, refused, slower than \(recoveredP99) ms): "
                  + recovery.timeline.map { "\($0.start): \($0.calls)/\($0.refused)/\($0.late)" }.joined(separator: "  "))
            try recovery.writeResultsJSON(to: "\(target.dir)/results-\(label)-recovery.json")
        }
    }

    private func openLoop(_ calls: [WorkloadCall], phones: [WorkloadPhone], rate: Double, transport: WorkloadTransport,
                          recorder: WorkloadRecorder, start: ContinuousClock.Instant) async {
        var rng = SplitMix64(seed: seed)
        await withTaskGroup(of: Void.self) { group in
            var t = 0.0
            for (i, call) in calls.enumerated() {
                t += -log(max(Double(rng.next() >> 11) / 9_007_199_254_740_992, 1e-12)) / (t < duration ? rate : afterRate ?? rate)
                guard t < duration + afterSeconds else { break }
                let arrival = start + .seconds(t)
                try? await Task.sleep(until: arrival, clock: .continuous)
                recorder.noteLag(ContinuousClock.now - arrival)
                let phone = phones[call.phone]
                group.addTask { [t] in
                    await Self.place(call, index: i, phone: phone, arrival: arrival, offset: t, transport: transport, recorder: recorder)
                }
            }
        }
    }

    /// Closed loop for capacity: a caller refused waits out the `Retry-After` it was given (at most 5 s) before its next
    /// call, as a client that honours it does. Callers that retry at once measure the refusals, not the capacity: each
    /// refusal costs the server a fraction of a millisecond, and 16 such callers kept it answering over a thousand
    /// refusals a second, a quarter of the lookups it serves when they wait (`bench/README.md`, *Population replay*).
    private func closedLoop(_ calls: [WorkloadCall], phones: [WorkloadPhone], callers: Int, honourRetryAfter: Bool,
                            transport: WorkloadTransport, recorder: WorkloadRecorder, start: ContinuousClock.Instant) async {
        let next = NextIndex()
        let end = start + .seconds(duration)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<max(callers, 1) {
                group.addTask {
                    while ContinuousClock.now < end, let i = next.take(below: calls.count) {
                        let now = ContinuousClock.now
                        let retryAfter = await Self.place(calls[i], index: i, phone: phones[calls[i].phone], arrival: now,
                                                          offset: (now - start).seconds, transport: transport, recorder: recorder)
                        if honourRetryAfter, let retryAfter {
                            try? await Task.sleep(until: min(ContinuousClock.now + .seconds(min(retryAfter, 5)), end), clock: .continuous)
                        }
                    }
                }
            }
        }
    }

    /// One call: every use case's request at once, each answer recorded with its latency from the arrival; the
    /// longest `Retry-After` (seconds) among its refusals, nil when none was refused with one.
    @discardableResult
    static func place(_ call: WorkloadCall, index: Int, phone: WorkloadPhone, arrival: ContinuousClock.Instant, offset: Double,
                      transport: WorkloadTransport, recorder: WorkloadRecorder) async -> Int? {
        recorder.placed(index)
        return await withTaskGroup(of: Int?.self) { group in
            for (u, request) in call.requests.enumerated() {
                group.addTask {
                    let headers = [("User-Identifier", phone.userIdentifier), ("User-Agent", WorkloadTarget.userAgent),
                                   ("Authorization", request.token)]
                    let outcome = await transport.post("/queries", headers: headers, body: request.body)
                    recorder.add(WorkloadResult(call: index, useCase: u, status: outcome.status, retryAfter: outcome.retryAfter != nil,
                                                latency: ContinuousClock.now - arrival, body: outcome.status == 200 ? outcome.body : [],
                                                failure: outcome.failure, arrival: offset))
                    return outcome.status == 200 ? nil : outcome.retryAfterSeconds
                }
            }
            return await group.reduce(nil) { longest, next in next.map { max($0, longest ?? 0) } ?? longest }
        }
    }
}
