import Foundation

/// One request's outcome in a replay: the call and use case it belongs to, the (inner) status, whether a refusal
/// carried `Retry-After`, the latency from the call's arrival, and the answer's body for `check`.
struct WorkloadResult: Sendable {
    var call: Int
    var useCase: Int
    var status: Int
    var retryAfter: Bool
    var latency: Duration
    var body: [UInt8]
    var failure: String?
    /// Seconds from the replay's start to the call's arrival.
    var arrival = 0.0

    /// Writes results with call indices made absolute (`firstCall` is the replay's first prepared call).
    static func save(_ results: [WorkloadResult], firstCall: Int, to path: String) throws {
        var writer = RecordWriter()
        for r in results {
            writer.u32(UInt32(firstCall + r.call))
            writer.u32(UInt32(r.useCase))
            writer.u32(UInt32(r.status))
            writer.u32(r.retryAfter ? 1 : 0)
            writer.u64(UInt64(r.latency.seconds * 1e6))
            writer.u64(UInt64(max(r.arrival, 0) * 1e6))
            writer.field(r.body)
        }
        try writer.write(to: path)
    }

    static func load(_ path: String) throws -> [WorkloadResult] {
        var reader = try RecordReader(path: path)
        var results: [WorkloadResult] = []
        while !reader.atEnd {
            let (call, useCase, status, retryAfter) = (Int(try reader.u32()), Int(try reader.u32()), Int(try reader.u32()), try reader.u32() == 1)
            let (latency, arrival) = (Duration.microseconds(Int64(try reader.u64())), Double(try reader.u64()) / 1e6)
            results.append(WorkloadResult(call: call, useCase: useCase, status: status, retryAfter: retryAfter, latency: latency,
                                          body: try reader.field(), failure: nil, arrival: arrival))
        }
        return results
    }
}
