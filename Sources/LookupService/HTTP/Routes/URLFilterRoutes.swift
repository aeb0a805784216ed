import Foundation
import HTTPTypes
import Hummingbird
import LookupEngine
import LookupProtocol
import NIOCore
import ServiceCore
import Synchronization
import URLFilter

/// The URL filter's Bloom prefilter as a versioned download for the app's `NEURLFilterControlProvider`:
/// `GET /url-filter/prefilter.json` (tag, bit count, hash count, MurmurHash3 seed: the `NEURLFilterPrefilter`
/// parameters) and `GET /url-filter/prefilter` (the bits). The tag is the ETag of both, so an app that already has
/// the current prefilter gets 304. A rebuilt prefilter is picked up on the next request.
public enum URLFilterRoutes {
    /// The files `callveil url-filter build` wrote, read again when `prefilter.json` changes.
    final class Files: Sendable {
        let directory: String
        private let cached = Mutex<(info: URLFilterList.PrefilterInfo, json: [UInt8], bits: [UInt8])?>(nil)

        init(directory: String) { self.directory = directory }

        func current() throws -> (info: URLFilterList.PrefilterInfo, json: [UInt8], bits: [UInt8]) {
            guard let json = FileManager.default.contents(atPath: "\(directory)/prefilter.json"),
                  let info = try? JSONDecoder().decode(URLFilterList.PrefilterInfo.self, from: json) else {
                throw LookupError.unavailable("No prefilter has been built", retryAfter: 60)
            }
            if let cached = cached.withLock({ $0 }), cached.info == info { return cached }
            guard let bits = FileManager.default.contents(atPath: "\(directory)/prefilter.bin"),
                  let filter = try? BloomPrefilter(bytes: [UInt8](bits), bitCount: info.bitCount, hashCount: info.hashCount, murmurSeed: info.murmurSeed),
                  filter.tag == info.tag else {
                throw LookupError.unavailable("The prefilter is being replaced", retryAfter: 5)
            }
            let entry = (info, [UInt8](json), [UInt8](bits))
            cached.withLock { $0 = entry }
            return entry
        }
    }

    /// Adds the prefilter download.
    public static func add(to router: some RouterMethods<LookupRequestContext>, prefilterDirectory: String, metrics: ServiceMetrics) {
        let files = Files(directory: prefilterDirectory)
        router.get("/url-filter/prefilter.json") { request, _ -> Response in
            let current = try files.current()
            return answer(request, bytes: current.json, tag: current.info.tag, type: "application/json", metrics: metrics)
        }
        router.get("/url-filter/prefilter") { request, _ -> Response in
            let current = try files.current()
            var response = answer(request, bytes: current.bits, tag: current.info.tag, type: "application/octet-stream", metrics: metrics)
            response.headers[HTTPField.Name("Prefilter-Bit-Count")!] = String(current.info.bitCount)
            response.headers[HTTPField.Name("Prefilter-Hash-Count")!] = String(current.info.hashCount)
            response.headers[HTTPField.Name("Prefilter-Murmur-Seed")!] = String(current.info.murmurSeed)
            return response
        }
    }

    static func answer(_ request: Request, bytes: [UInt8], tag: String, type: String, metrics: ServiceMetrics) -> Response {
        var headers = HTTPFields()
        headers[.eTag] = "\"\(tag)\""
        headers[.cacheControl] = "public, max-age=300"
        if EntityTag.matches(request, etag: "\"\(tag)\"") {
            metrics.increment("callveil_url_prefilter_downloads_total", dimensions: [("result", "not-modified")])
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = type
        metrics.increment("callveil_url_prefilter_downloads_total", dimensions: [("result", "ok")])
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
