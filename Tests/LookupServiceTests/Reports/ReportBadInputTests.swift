import Foundation
import LookupClient
import LookupProtocol
import LookupService
import Reports
import ServiceCore
import ServiceTestSupport
import Testing
import URLFilter

/// Every report endpoint's refusals, each with its status and error code, and nothing stored for any of them.
@Suite("Report endpoints: bad input")
struct ReportBadInputTests {
    static func start() async throws -> (TestServer, String) {
        let root = try temporaryDirectory()
        let dataset = try DemoDataset.make(in: root, count: 40)
        try FileManager.default.createDirectory(atPath: "\(root)/prefilter", withIntermediateDirectories: true)
        try URLFilterList(text: "https://www.example.com/bad\n").write(to: "\(root)/prefilter", falsePositiveRate: 0.01)
        let config = try writeServiceConfig(in: root, usecases: dataset.useCases) { config in
            var reports = ServiceConfig.Reports()
            reports.maxReportBytes = 4096
            reports.reportBurst = 3
            reports.reportsPerHour = 1
            config.reports = reports
            config.callDirectory = .init()
            config.urlFilter = .init(prefilterDirectory: "\(root)/prefilter", maxURLsPerReport: 5)
        }
        return (try await TestServer.start(configPath: config), root)
    }

    @Test("classification reports: malformed, oversized, wrong types, unauthenticated, bad numbers; a replay counts once; rate limit")
    func classificationReports() async throws {
        let (server, _) = try await Self.start()
        defer { Task { await server.stop() } }
        let credential = try await ReportLoopTests.credential(server, "AAAA")
        func post(_ text: String, type: String = "application/json") async throws -> (Int, String) {
            let answer = try await server.http.send(path: "/classification-report", headers: [("Content-Type", type)], body: Array(text.utf8))
            return (answer.status, String(decoding: answer.body, as: UTF8.self))
        }
        func info(_ fields: String) -> String { #"{"classification":"reportJunk","app":{"reporter":"\#(credential)","reportId":"r1","channel":"sms",\#(fields)}}"# }
        let cases: [(String, String, Int, String)] = [
            ("not JSON", "{\"app\": ", 400, "report.malformed-json"),
            ("a JSON array", "[1,2]", 400, "report.malformed-json"),
            ("number of the wrong type", info(#""number":15551234567"#), 400, "report.bad-field"),
            ("user info of the wrong type", #"{"classification":"reportJunk","app":"x"}"#, 400, "report.bad-field"),
            ("no user info", #"{"classification":"reportJunk"}"#, 400, "report.bad-field"),
            ("action none", info(#""number":"+15551234567""#).replacingOccurrences(of: "reportJunk", with: "none"), 400, "report.bad-field"),
            ("unknown action", info(#""number":"+15551234567""#).replacingOccurrences(of: "reportJunk", with: "reportSpam"), 400, "report.bad-field"),
            ("verdict against action", info(#""number":"+15551234567","verdict":"notJunk""#), 400, "report.bad-field"),
            ("not E.164", info(#""number":"+0123""#), 400, "report.bad-number"),
            ("letters", info(#""number":"call me""#), 400, "report.bad-number"),
            ("bad category", info(#""number":"+15551234567","category":"a b""#), 400, "report.bad-field"),
            ("note too long", info(#""number":"+15551234567","note":""# + String(repeating: "x", count: 281) + "\""), 400, "report.bad-field"),
            ("missing credential", #"{"classification":"reportJunk","app":{"reportId":"r1","number":"+15551234567","channel":"call"}}"#, 401, "report.unauthenticated"),
            ("forged credential", info(#""number":"+15551234567""#).replacingOccurrences(of: credential, with: String(credential.reversed())), 401, "report.unauthenticated"),
            ("oversized", info(#""number":"+15551234567","note":""# + String(repeating: "x", count: 5000) + "\""), 413, "report.too-large"),
        ]
        for (name, body, status, code) in cases {
            let (got, text) = try await post(body)
            #expect(got == status && text.contains(code), "\(name): \(got) \(text)")
        }
        let (wrongType, typeText) = try await post(info(#""number":"+15551234567""#), type: "text/plain")
        #expect(wrongType == 415 && typeText.contains("report.unsupported-media-type"))
        let store = try #require(server.server.feeds.store)
        #expect(try await store.reports(number: nil, limit: 10).isEmpty, "nothing refused was stored")

        // A valid report, replayed twice: counted once. Raw action values are accepted too.
        let valid = info(#""number":"+1 (555) 123-4567""#).replacingOccurrences(of: "\"reportJunk\"", with: "2")
        #expect(try await post(valid).1.contains("\"new\""))
        #expect(try await post(valid).1.contains("\"duplicate\""))
        #expect(try await post(valid).1.contains("\"duplicate\""))
        let aggregate = try await store.aggregates(minReporters: 1, limit: 10)
        #expect(aggregate.count == 1 && aggregate[0].number == "+15551234567" && aggregate[0].junk == 1)
        // The burst of three is spent: the reporter is told to wait.
        let limited = try await server.http.exchange(path: "/classification-report", headers: [("Content-Type", "application/json")], body: Array(valid.utf8))
        #expect(limited.status == 429 && limited.headers.contains { $0.0.lowercased() == "retry-after" })
        // Credentials need a known user token.
        #expect(try await server.http.send(path: "/reporter-credential", headers: [], body: []).status == 401)
        #expect(try await server.http.send(path: "/reporter-credential", headers: [("Authorization", "Bearer nobody")], body: []).status == 401)
    }

    @Test("URL reports: missing token, malformed JSON, wrong types, too many, oversized, bad URLs; a replayed token counts once")
    func urlReports() async throws {
        let (server, _) = try await Self.start()
        defer { Task { await server.stop() } }
        let json = [("Content-Type", "application/json")]
        #expect(try await server.post("/report", body: Array(#"["example.com/bad"]"#.utf8), headers: json, token: false).status == 401)
        let cases: [(String, [(String, String)], [UInt8], Int)] = [
            ("malformed JSON", json, Array("[\"a".utf8), 400),
            ("numbers", json, Array("[1,2]".utf8), 400),
            ("an object", json, Array(#"{"urls":["a.com"]}"#.utf8), 400),
            ("empty", json, Array("[]".utf8), 400),
            ("too many", json, Array(("[" + (0..<6).map { "\"u\($0).com\"" }.joined(separator: ",") + "]").utf8), 400),
            ("not a URL", json, Array(#"["exa mple.com"]"#.utf8), 400),
            ("bad protobuf", [("Content-Type", "application/protobuf")], [0x0A, 0x50, 0x01], 400),
            ("oversized", json, Array(repeating: 0x20, count: 20_000), 413),
            ("wrong media type", [("Content-Type", "text/csv")], Array("a.com".utf8), 415),
        ]
        for (name, headers, body, status) in cases {
            #expect(try await server.post("/report", body: body, headers: headers).status == status, "\(name)")
        }
        let store = try #require(server.server.feeds.store)
        #expect(try await store.urlAggregates(limit: 10).isEmpty)
        // One token, sent twice: the second is a spent token.
        let authorization = try #require(try await server.tokens?.authorization())
        var report = ProtoURLFilterReport()
        report.urls = ["https://www.Example.com/bad", "http://example.com/bad"]
        let body: [UInt8] = try report.serializedBytes()
        let headers = [("Content-Type", "application/protobuf"), ("Authorization", authorization)]
        #expect(try await server.http.send(path: "/report", headers: headers, body: body).status == 200)
        #expect(try await server.http.send(path: "/report", headers: headers, body: body).status == 401)
        #expect(try await store.urlAggregates(limit: 10) .map { [$0.url: $0.reports] } == [["example.com/bad": 1]])
        #expect(try await server.post("/report", body: Array(#"["example.com/bad"]"#.utf8), headers: json).status == 200)
        #expect(try await store.urlAggregates(limit: 10).first?.reports == 2)
    }

    @Test("the feed refuses unknown lists, bad numbers and versions that do not exist")
    func feedParameters() async throws {
        let (server, _) = try await Self.start()
        defer { Task { await server.stop() } }
        func get(_ path: String) async throws -> Int { try await server.http.send(method: .GET, path: path, headers: [], body: nil).status }
        #expect(try await get("/call-directory/blocking") == 200)
        #expect(try await get("/call-directory/allow") == 404)
        #expect(try await get("/call-directory/blocking?since=x") == 400)
        #expect(try await get("/call-directory/blocking?after=-5") == 400)
        #expect(try await get("/call-directory/blocking?version=3") == 404)
        let store = try #require(server.server.feeds.store)
        _ = try await store.publish(.blocking, entries: [DirectoryEntry(number: 15551234567, reason: "test")], at: 1)
        #expect(try await get("/call-directory/blocking?version=1&since=2") == 400)
        #expect(try await get("/call-directory/blocking?version=1&since=0") == 200)
    }
}
