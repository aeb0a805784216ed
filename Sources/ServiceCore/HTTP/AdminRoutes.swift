import Foundation
import Hummingbird
import LookupEngine
import NIOCore

/// The operational endpoints, `/healthz` (alive: use-case versions and the executor's state), `/readyz` (every use
/// case serving at the version the config asks for, the last reload in full, the executor serving every shard; 503
/// otherwise) and `/metrics` (Prometheus): served on the admin listener (loopback by default), never on the public
/// port, since they tell an outsider the service's size, load and cluster layout.
public enum AdminRoutes {
    /// Adds `/healthz`, `/readyz` and `/metrics` to `router`.
    public static func add<Context: RequestContext>(to router: Router<Context>, registry: UseCaseRegistry, metrics: ServiceMetrics,
                                                    executor: any ShardExecutor, reloads: ReloadStatus) {
        router.get("/healthz") { _, _ -> Response in
            let versions = registry.allVersions.map {
                "{\"usecase\":\"\($0.name)\",\"configId\":\"\($0.configIDHex)\",\"shards\":\($0.configuration.shards.count)}"
            }
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(string: "{\"status\":\"ok\",\"versions\":[\(versions.joined(separator: ","))]"
                                + (executor.healthJSON.map { ",\"executor\":\($0)" } ?? "") + "}")))
        }
        router.get("/readyz") { _, _ -> Response in
            let outcome = reloads.outcome
            let unserved = executor.unservedShards
            let ready = outcome.successful && unserved == 0 && !registry.names.isEmpty
            var fields = ["\"status\":\"\(ready ? "ready" : "not ready")\"",
                          "\"lastReload\":\"\(outcome.successful ? "success" : "failure")\"",
                          "\"unservedShards\":\(unserved)"]
            if !outcome.failedUseCases.isEmpty {
                fields.append("\"failedUseCases\":[\(outcome.failedUseCases.map(StructuredLogHandler.jsonString).joined(separator: ","))]")
            }
            if let error = outcome.error { fields.append("\"error\":\(StructuredLogHandler.jsonString(error))") }
            return Response(status: ready ? .ok : .serviceUnavailable, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(string: "{\(fields.joined(separator: ","))}")))
        }
        addMetrics(to: router, metrics: metrics)
    }

    /// Adds `/metrics` alone (a stand-alone gateway has no use cases to report).
    public static func addMetrics<Context: RequestContext>(to router: Router<Context>, metrics: ServiceMetrics) {
        router.get("/metrics") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                     body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
        }
    }
}
