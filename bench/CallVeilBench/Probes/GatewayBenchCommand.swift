import ArgumentParser
import AsyncHTTPClient
import Foundation
import LookupClient
import LookupProtocol
import ObliviousHTTP

/// `callveil-bench gateway-bench`: what the Oblivious HTTP hop costs. Against a service whose public port also serves
/// the gateway, the same requests go directly and through the gateway (encapsulated, Binary HTTP), interleaved in
/// blocks with the order alternating, one at a time; every PIR answer of both paths is decrypted and checked.
/// Prints latency percentiles per path and the service's CPU time per request (from `/proc/<pid>/stat`).
struct GatewayBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway-bench",
        abstract: "Measure the latency and CPU the Oblivious HTTP gateway hop adds (direct vs encapsulated, interleaved).")

    @Option(help: "The service (with its gateway on), e.g. https://127.0.0.1:8443.")
    var url: String

    @Option(help: "PEM file of a CA to trust (a test certificate).")
    var ca: String?

    @Option(help: "The service's process id, for its CPU time per request.")
    var serverPid: Int32?

    @Option(help: "Requests per path and endpoint.")
    var requests: Int = 400

    @Option(help: "Requests per block (the paths alternate by block).")
    var block: Int = 25

    @Option(help: "A number the dataset blocks (checked to answer 1).")
    var blocked: String

    @Option(help: "A number the dataset does not have (checked to answer nothing).")
    var absent: String

    @Option(help: "Block use-case name.")
    var useCase: String = "net.example.lookup.block"

    func run() async throws {
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .trusting(ca))
        do {
            try await measure(LookupHTTPClient(baseURL: url, client: client))
            try await client.shutdown()
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    private func measure(_ http: LookupHTTPClient) async throws {
        let device = LookupDevice(http: http, authorization: NoAuthorization())
        try await device.syncConfig([useCase])
        let (keysStatus, keys) = try await http.send(method: .GET, path: "/ohttp-configs", headers: [], body: nil)
        guard keysStatus == 200, let config = try OHTTPKeyConfig.decodeList(keys).first else {
            throw ValidationError("\(url)/ohttp-configs answered \(keysStatus): is the gateway on?")
        }
        let headers = [("User-Identifier", await device.userIdentifier), ("User-Agent", await device.userAgent)]
        let configBody = try ProtoConfigRequest.with { $0.usecases = [useCase] }.serializedBytes() as [UInt8]
        let numbers = [(Array(blocked.utf8), [UInt8]?([1])), (Array(absent.utf8), nil)]
        var queryBodies: [[UInt8]] = []
        for (keyword, _) in numbers { queryBodies.append(try await device.queryRequest(keyword, in: useCase).serializedBytes()) }

        /// One exchange, direct or through the gateway: the inner status and body.
        func exchange(_ path: String, _ body: [UInt8], gateway: Bool) async throws -> [UInt8] {
            if !gateway {
                let (status, answer) = try await http.send(path: path, headers: headers, body: body)
                guard status == 200 else { throw ValidationError("\(path) answered \(status)") }
                return answer
            }
            let inner = BinaryHTTPRequest(method: "POST", authority: "lookup.example", path: path,
                                          headers: headers.map { BinaryHTTPField($0.0.lowercased(), $0.1) }, content: body)
            let request = try OHTTPClientRequest(try inner.encoded(), config: config)
            let (status, sealed) = try await http.send(path: "/ohttp-gateway", headers: [("Content-Type", "message/ohttp-req")],
                                                       body: request.encapsulated)
            guard status == 200 else { throw ValidationError("the gateway answered \(status)") }
            let response = try BinaryHTTPResponse(decoding: try request.openResponse(sealed))
            guard response.status == 200 else { throw ValidationError("\(path) through the gateway answered \(response.status)") }
            return response.content
        }

        print("| endpoint | path | requests | p50 ms | p99 ms | mean ms | service CPU ms/request |")
        print("|---|---|---:|---:|---:|---:|---:|")
        var added: [String] = []
        for endpoint in ["/config", "/queries"] {
            var latencies: [Bool: [Double]] = [false: [], true: []]
            var cpu: [Bool: Double] = [false: 0, true: 0]
            var checked = 0
            for round in 0..<max(requests / block, 1) {
                for gateway in round % 2 == 0 ? [false, true] : [true, false] {
                    let cpuBefore = serverPid.flatMap(Self.cpuSeconds)
                    for i in 0..<block {
                        let which = i % numbers.count
                        let body = endpoint == "/config" ? configBody : queryBodies[which]
                        let start = ContinuousClock.now
                        let answer = try await exchange(endpoint, body, gateway: gateway)
                        let elapsed = ContinuousClock.now - start
                        latencies[gateway]!.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
                        if endpoint == "/queries" {
                            let value = try await device.decode(answer, keyword: numbers[which].0, in: useCase)
                            guard value == numbers[which].1 else { throw ValidationError("a wrong answer for number \(which) (gateway: \(gateway))") }
                        } else {
                            _ = try ProtoConfigResponse(serializedBytes: answer)
                        }
                        checked += 1
                    }
                    if let before = cpuBefore, let after = serverPid.flatMap(Self.cpuSeconds) { cpu[gateway]! += after - before }
                }
            }
            for gateway in [false, true] {
                let values = latencies[gateway]!
                let cpuText = serverPid == nil ? "–" : String(format: "%.3f", cpu[gateway]! * 1000 / Double(values.count))
                print("| \(endpoint) | \(gateway ? "gateway" : "direct") | \(values.count) | \(String(format: "%.3f", BenchReport.percentile(values, 0.5))) | "
                    + "\(String(format: "%.3f", BenchReport.percentile(values, 0.99))) | \(String(format: "%.3f", values.reduce(0, +) / Double(values.count))) | \(cpuText) |")
            }
            let direct = latencies[false]!, through = latencies[true]!
            added.append("\(endpoint): the hop adds \(String(format: "%.3f", BenchReport.percentile(through, 0.5) - BenchReport.percentile(direct, 0.5))) ms at p50, "
                + "\(String(format: "%.3f", BenchReport.percentile(through, 0.99) - BenchReport.percentile(direct, 0.99))) ms at p99"
                + (serverPid == nil ? "" : String(format: ", %.3f ms of service CPU per request", (cpu[true]! - cpu[false]!) * 1000 / Double(through.count)))
                + " (\(checked) answers checked)")
        }
        print("")
        for line in added { print(line) }
    }

    /// User plus system CPU seconds of a process.
    static func cpuSeconds(_ pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
