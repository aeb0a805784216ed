import Foundation
import Hummingbird
import LookupEngine
import NIOCore
import Reports
import ServiceCore

/// The Call Directory feed an app downloads for its CallKit extension: `GET /call-directory/blocking` and
/// `…/identification`, the whole list or the changes since a version (`since=`), at a fixed version (`version=`,
/// default the newest) one page at a time (`after=` the previous page's `next`). Numbers are
/// `CXCallDirectoryPhoneNumber` values in ascending order, as the extension must add them. Versions never change,
/// so every page has a strong ETag (`If-None-Match` gets 304) and may be cached; bodies are gzip-encoded when
/// accepted. This is the provider's public list: only what was published to it, never the PIR database.
public enum CallDirectoryRoutes {
    /// Adds the feed.
    public static func add(to router: some RouterMethods<LookupRequestContext>, store: any ReportStore, maxEntriesPerPage: Int, metrics: ServiceMetrics) {
        router.get("/call-directory/:list") { request, context -> Response in
            guard let name = context.parameters.get("list"), let list = DirectoryList(rawValue: name) else {
                throw LookupError(.notFound, "No such list (blocking or identification)")
            }
            let query = request.uri.queryParameters
            func integer(_ key: String) throws -> Int64? {
                guard let text = query[key[...]] else { return nil }
                guard let value = Int64(String(text)), value >= 0 else { throw LookupError.badRequest("\(key) must be a non-negative integer") }
                return value
            }
            let current = try await store.currentVersion(list)
            let version = try integer("version").map(Int.init) ?? current
            guard version <= current else { throw LookupError(.notFound, "Version \(version) does not exist yet (newest \(current))") }
            let since = try integer("since").map(Int.init)
            if let since, since > version { throw LookupError.badRequest("since (\(since)) is after version (\(version))") }
            let after = try integer("after")
            var limit = maxEntriesPerPage
            if let asked = try integer("limit") { limit = Int(max(1, min(asked, Int64(maxEntriesPerPage)))) }
            let etag = "\"cd-\(list.rawValue)-\(version)-\(since.map(String.init) ?? "full")-\(after.map(String.init) ?? "start")-\(limit)\""
            var headers = HTTPFields()
            headers[.eTag] = etag
            // A page at a named version never changes; the newest version's first page does when a list is published.
            headers[.cacheControl] = query["version"] != nil ? "public, max-age=86400, immutable" : "public, max-age=60"
            headers[.vary] = "Accept-Encoding"
            if EntityTag.matches(request, etag: etag) {
                metrics.increment("callveil_call_directory_pages_total", dimensions: [("list", list.rawValue), ("result", "not-modified")])
                return Response(status: .notModified, headers: headers)
            }
            let page = try await store.page(list, version: version, since: since, after: after, limit: limit)
            let body = try encode(page, list: list, since: since)
            var bytes = body
            if LookupRoutes.acceptsGzip(request) {
                bytes = try Gzip.compress(body)
                headers[.contentEncoding] = "gzip"
            }
            headers[.contentType] = "application/json"
            metrics.increment("callveil_call_directory_pages_total", dimensions: [("list", list.rawValue), ("result", since == nil ? "full" : "incremental")])
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
    }

    /// The page as JSON: `{"list", "version", "since"?, "incremental", "additions": [{"number", "label"?}],
    /// "removals": [number], "next"?}`.
    static func encode(_ page: DirectoryPage, list: DirectoryList, since: Int?) throws -> [UInt8] {
        struct Body: Encodable {
            struct Addition: Encodable {
                var number: Int64
                var label: String?
            }
            var list: String
            var version: Int
            var since: Int?
            var incremental: Bool
            var additions: [Addition]
            var removals: [Int64]
            var next: Int64?
        }
        let body = Body(list: list.rawValue, version: page.version, since: since, incremental: since != nil,
                        additions: page.additions.map { .init(number: $0.number, label: list == .identification ? $0.label : nil) },
                        removals: page.removals, next: page.next)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(body))
    }
}
