import Foundation

/// A prepared call: the phone that gets it, the number, each use case's expected value and its `/queries` request
/// (token and body), as the phone sends when the call rings.
struct WorkloadCall {
    var phone: Int
    var number: String
    var expected: [[UInt8]?]
    var requests: [(token: String, body: [UInt8])]

    static func path(_ directory: String) -> String { "\(directory)/calls.bin" }

    static func save(_ calls: [WorkloadCall], to directory: String) throws {
        var writer = RecordWriter()
        for call in calls {
            writer.u32(UInt32(call.phone))
            writer.string(call.number)
            writer.u32(UInt32(call.requests.count))
            for (expected, request) in zip(call.expected, call.requests) {
                writer.optional(expected)
                writer.string(request.token)
                writer.field(request.body)
            }
        }
        try writer.write(to: path(directory))
    }

    static func load(_ directory: String) throws -> [WorkloadCall] {
        var reader = try RecordReader(path: path(directory))
        var calls: [WorkloadCall] = []
        while !reader.atEnd {
            var call = WorkloadCall(phone: Int(try reader.u32()), number: try reader.string(), expected: [], requests: [])
            for _ in 0..<Int(try reader.u32()) {
                call.expected.append(try reader.optional())
                call.requests.append((try reader.string(), try reader.field()))
            }
            calls.append(call)
        }
        return calls
    }
}
