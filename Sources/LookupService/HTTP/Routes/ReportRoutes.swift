import Foundation
import Hummingbird
import LookupEngine
import LookupProtocol
import NIOCore
import Reports
import ServiceCore
import SwiftProtobuf
import URLFilter

/// The report endpoints: `POST /reporter-credential` (the app's user token in, its reporter credential out),
/// `POST /classification-report` (what the system sends for an Unwanted Communication Reporting extension) and,
/// when the URL filter is on, `POST /report` (a URL filter's matched URLs, with a Privacy Pass token). Bodies are
/// bounded, reporters rate-limited, and nothing of a report's content is logged.
public enum ReportRoutes {
    /// What the report routes need.
    public struct Settings: Sendable {
        /// Where reports go.
        public var store: any ReportStore
        /// Checks and issues reporter credentials.
        public var credentials: ReporterCredential
        /// Reports per reporter (its pseudonym as the key, tier "reporter").
        public var limiter: IssuanceLimiter
        /// Largest report body.
        public var maxReportBytes: Int
        /// The tier of a user token (nil: unknown token).
        public var tierOf: @Sendable (String) -> String?
        /// Metrics.
        public var metrics: ServiceMetrics
        /// The clock (seconds since 1970).
        public var now: @Sendable () -> Double = { Date().timeIntervalSince1970 }
    }

    /// Adds the classification-report routes.
    public static func add(to router: some RouterMethods<LookupRequestContext>, settings: Settings) {
        router.post("/reporter-credential") { request, _ -> Response in
            let (userToken, _) = try PrivacyPassRoutes.userToken(request, tierOf: settings.tierOf)
            return json(["reporter": settings.credentials.issue(userToken: userToken)])
        }
        router.post("/classification-report") { request, _ -> Response in
            do {
                try requireJSON(request)
                let body = try await bodyOrRefuse(request, limit: settings.maxReportBytes)
                let report = try ClassificationReport.parse(body, credentials: settings.credentials, now: settings.now())
                if let wait = settings.limiter.take(userToken: report.reporter, tier: "reporter") {
                    settings.metrics.increment("callveil_report_refusals_total", dimensions: [("code", "rate-limited")])
                    throw LookupError.tooManyRequests("Too many reports from this reporter", retryAfter: wait)
                }
                let outcome = try await settings.store.record(report)
                settings.metrics.increment("callveil_reports_total", dimensions: [("outcome", outcome.rawValue), ("verdict", report.verdict.rawValue)])
                return json(["outcome": outcome.rawValue])
            } catch let error as ReportError {
                settings.metrics.increment("callveil_report_refusals_total", dimensions: [("code", error.code.description)])
                throw error.lookupError
            }
        }
    }

    /// Adds `POST /report` (URL-filter reports) behind `verifier`.
    public static func addURLReports(to router: some RouterMethods<LookupRequestContext>, store: any ReportStore, verifier: (any PrivateTokenVerifier)?,
                                     maxURLs: Int, metrics: ServiceMetrics, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        let group = router.group()
        if let verifier { group.add(middleware: PrivateTokenMiddleware(verifier: verifier, metrics: metrics)) }
        group.post("/report") { request, _ -> Response in
            do {
                let body = try await bodyOrRefuse(request, limit: maxURLs * (URLNormalizer.maxLength + 8) + 64)
                let raw = try urls(in: body, contentType: request.headers[.contentType])
                guard !raw.isEmpty else { throw ReportError(.badField, "no URLs") }
                guard raw.count <= maxURLs else { throw ReportError(.badField, "more than \(maxURLs) URLs") }
                let normalized = try raw.map { url in
                    do { return try URLNormalizer.normalize(url) } catch let error as URLFilterError {
                        throw ReportError(.badField, "a URL is not valid: \(error.reason)")
                    }
                }
                try await store.recordURLs(normalized, at: now())
                metrics.increment("callveil_url_reports_total")
                return json(["accepted": String(Set(normalized).count)])
            } catch let error as ReportError {
                metrics.increment("callveil_report_refusals_total", dimensions: [("code", error.code.description)])
                throw error.lookupError
            }
        }
    }

    /// The URLs of a `/report` body: protobuf `URLFilterReport`, or a JSON array of strings when the media type
    /// is JSON.
    static func urls(in body: [UInt8], contentType: String?) throws -> [String] {
        switch MediaType.essence(contentType) {
        case "application/json":
            guard let list = try? JSONDecoder().decode([String].self, from: Data(body)) else {
                throw ReportError(.malformedJSON, "the body is not a JSON array of strings")
            }
            return list
        case nil, "application/protobuf", "application/x-protobuf", "application/octet-stream":
            do { return try ProtoURLFilterReport(serializedBytes: body).urls } catch {
                throw ReportError(.badField, "the body is not a URLFilterReport")
            }
        default:
            throw ReportError(.unsupportedMediaType, "send application/json or application/protobuf")
        }
    }

    static func requireJSON(_ request: Request) throws {
        guard let type = MediaType.essence(request.headers[.contentType]) else { return }
        guard type == "application/json" else {
            throw ReportError(.unsupportedMediaType, "send application/json")
        }
    }

    static func bodyOrRefuse(_ request: Request, limit: Int) async throws -> [UInt8] {
        do { return try await LookupRoutes.body(request, limit: limit) } catch let error as LookupError where error.status == .contentTooLarge {
            throw ReportError(.tooLarge, "the body exceeds \(limit) bytes")
        }
    }

    static func json(_ object: [String: String]) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        let data = (try? JSONEncoder().encode(object)) ?? Data("{}".utf8)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
