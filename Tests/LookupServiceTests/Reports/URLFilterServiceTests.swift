import Dataset
import Foundation
import LookupClient
import LookupProtocol
import LookupService
import ServiceTestSupport
import Testing
import URLFilter

/// The URL-filter use case end to end: a URL list processed, served by the same PIR service, queried by a phone
/// (listed and unlisted URLs, each answer decrypted), and the prefilter downloaded and checked.
@Suite("URL filter through the service")
struct URLFilterServiceTests {
    @Test("listed and unlisted URLs answer correctly; the downloaded prefilter holds every listed URL; ETag gives 304")
    func roundTrip() async throws {
        let root = try temporaryDirectory()
        let listed = (0..<300).map { "https://www.site\($0).example/ads/\($0 % 7)?campaign=\($0)" } + ["http://bücher.example/", "tracker.example"]
        try listed.joined(separator: "\n").write(toFile: "\(root)/urls.txt", atomically: true, encoding: .utf8)
        let list = try URLFilterList(text: try String(contentsOfFile: "\(root)/urls.txt", encoding: .utf8))
        let info = try list.write(to: "\(root)/url-filter", falsePositiveRate: 0.001)
        let options = DatasetManifest.Options(preset: "n_4096_logq_27_28_28_logt_5", shardCount: 2)
        _ = try DatasetBuilder(options: options, directory: "\(root)/url-db", stem: "urls", threads: 1).build(input: "\(root)/url-filter/urls.binpb")
        let useCase = "com.example.filter.url.filtering"
        let config = try writeServiceConfig(in: root, usecases: [.init(name: useCase, manifest: "\(root)/url-db/urls.manifest.json")]) {
            $0.urlFilter = .init(prefilterDirectory: "\(root)/url-filter")
        }
        let server = try await TestServer.start(configPath: config)
        defer { Task { await server.stop() } }

        let meta = try await server.http.exchange(method: .GET, path: "/url-filter/prefilter.json", headers: [], body: nil)
        #expect(meta.status == 200)
        let served = try JSONDecoder().decode(URLFilterList.PrefilterInfo.self, from: Data(meta.body))
        #expect(served == info && served.itemCount == listed.count)
        let bits = try await server.http.exchange(method: .GET, path: "/url-filter/prefilter", headers: [], body: nil)
        let filter = try BloomPrefilter(bytes: bits.body, bitCount: served.bitCount, hashCount: served.hashCount, murmurSeed: served.murmurSeed)
        #expect(filter.tag == served.tag)
        let normalized = try listed.map(URLNormalizer.normalize)
        #expect(normalized.allSatisfy(filter.mayContain), "every listed URL is in the downloaded prefilter")
        let etag = try #require(bits.headers.first { $0.0.lowercased() == "etag" }?.1)
        #expect(etag == "\"\(served.tag)\"")
        #expect(try await server.http.send(method: .GET, path: "/url-filter/prefilter", headers: [("If-None-Match", etag)], body: nil).status == 304)

        let device = server.device()
        for url in [normalized[0], normalized[151], "xn--bcher-kva.example/", "tracker.example"] {
            #expect(try await device.lookup(Array(url.utf8), in: useCase) == [1], "\(url) is listed")
        }
        for url in ["site0.example/ads/1?campaign=0", "example.org", "tracker.example/other"] {
            #expect(try await device.lookup(Array(url.utf8), in: useCase) == nil, "\(url) is not listed")
        }
    }
}
