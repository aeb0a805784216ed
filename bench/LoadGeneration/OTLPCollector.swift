import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// A receiver of OpenTelemetry spans over OTLP/HTTP with JSON bodies (`POST /v1/traces`), kept in memory: the
/// collector end of a traced run, so a test can check a lookup's trace and the bench can print its slowest one.
public final class OTLPCollector: Sendable {
    /// One received span: ids as sent (opaque strings), times in Unix nanoseconds.
    public struct Span: Sendable, Equatable {
        public let traceID: String
        public let spanID: String
        public let parentSpanID: String
        public let name: String
        public let service: String
        public let start: UInt64
        public let end: UInt64
        public let attributes: [String: String]

        /// The span's length.
        public var duration: Duration { .nanoseconds(Int64(end &- start)) }
    }

    private let received = Mutex<[Span]>([])
    private let bodyLimit: Int

    /// A collector accepting bodies up to `bodyLimit` bytes.
    public init(bodyLimit: Int = 16 << 20) {
        self.bodyLimit = bodyLimit
    }

    /// Every span received so far.
    public var spans: [Span] { received.withLock { $0 } }

    /// The receiving application on `host:port` (0: any free port; `onRunning` gets the port).
    public func makeApplication(host: String = "127.0.0.1", port: Int = 0,
                                onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let router = Router()
        router.post("/v1/traces") { [self] request, context -> Response in
            let body = try await request.body.collect(upTo: bodyLimit)
            let spans = try Self.decode(Data(buffer: body))
            received.withLock { $0.append(contentsOf: spans) }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: "{}")))
        }
        return Application(router: router, configuration: .init(address: .hostname(host, port: port)),
                           onServerRunning: { await onRunning($0.localAddress?.port ?? port) })
    }

    /// Starts receiving on a free loopback port; returns the traces URL to export to, and how to stop.
    public func start() async throws -> (url: String, stop: @Sendable () async -> Void) {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let group = ServiceGroup(configuration: .init(services: [makeApplication { continuation.yield($0) }],
                                                      logger: Logger(label: "otlp-collector")))
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        return ("http://127.0.0.1:\(port)/v1/traces", {
            await group.triggerGracefulShutdown()
            _ = try? await task.value
        })
    }

    /// The spans of an OTLP JSON export request (`ExportTraceServiceRequest`).
    public static func decode(_ json: Data) throws -> [Span] {
        guard let root = try JSONSerialization.jsonObject(with: json) as? [String: Any] else { throw CollectorError.notAnExport }
        var spans: [Span] = []
        for resourceSpans in root["resourceSpans"] as? [[String: Any]] ?? [] {
            let resource = attributes((resourceSpans["resource"] as? [String: Any])?["attributes"])
            for scope in resourceSpans["scopeSpans"] as? [[String: Any]] ?? [] {
                for span in scope["spans"] as? [[String: Any]] ?? [] {
                    spans.append(Span(traceID: span["traceId"] as? String ?? "", spanID: span["spanId"] as? String ?? "",
                                      parentSpanID: span["parentSpanId"] as? String ?? "", name: span["name"] as? String ?? "",
                                      service: resource["service.name"] ?? "", start: number(span["startTimeUnixNano"]),
                                      end: number(span["endTimeUnixNano"]), attributes: attributes(span["attributes"])))
                }
            }
        }
        return spans
    }

    /// OTLP's key-value list as strings.
    static func attributes(_ list: Any?) -> [String: String] {
        var result: [String: String] = [:]
        for entry in list as? [[String: Any]] ?? [] {
            guard let key = entry["key"] as? String, let value = entry["value"] as? [String: Any], let first = value.first else { continue }
            result[key] = "\(first.value)"
        }
        return result
    }

    /// A uint64 sent as a JSON string (proto3 JSON) or number.
    static func number(_ value: Any?) -> UInt64 {
        if let string = value as? String { return UInt64(string) ?? 0 }
        return (value as? NSNumber)?.uint64Value ?? 0
    }

    /// A trace as an indented tree: each span's offset from the trace's start, its length and its service.
    public static func render(_ trace: [Span]) -> [String] {
        guard let origin = trace.map(\.start).min() else { return [] }
        let ids = Set(trace.map(\.spanID))
        let children = Dictionary(grouping: trace) { ids.contains($0.parentSpanID) ? $0.parentSpanID : "" }
        var lines: [String] = []
        func walk(_ parent: String, depth: Int) {
            for span in (children[parent] ?? []).sorted(by: { $0.start < $1.start }) {
                let offset = Double(span.start - origin) / 1e6, length = Double(span.end &- span.start) / 1e6
                let name = String(repeating: "  ", count: depth) + span.name
                lines.append(name.padding(toLength: 34, withPad: " ", startingAt: 0)
                             + String(format: "%9.1f ms %9.1f ms  %@", offset, length, span.service))
                walk(span.spanID, depth: depth + 1)
            }
        }
        walk("", depth: 0)
        return lines
    }

    /// The request was not an OTLP JSON export.
    public enum CollectorError: Error { case notAnExport }
}
