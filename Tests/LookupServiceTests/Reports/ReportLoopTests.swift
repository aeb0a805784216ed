import ConformanceSupport
import Dataset
import Foundation
import LookupClient
import LookupProtocol
import LookupService
import Reports
import ServiceCore
import ServiceTestSupport
import Testing

/// The provider's loop through real HTTP: reporters' junk reports cross the policy's threshold, the next blocking
/// list is published and the block database brought to it, phones' lookups answer blocked while other lookups run,
/// the Call Directory feed lists the addition; a not-junk majority and a manual reject take numbers off again.
@Suite("Reports to the blocking list")
struct ReportLoopTests {
    static let reporters = (0..<16).map { "R\($0)" }

    struct Loop {
        let root: String
        let server: TestServer
        let manifest: String
        let numbers: [String]  // in the block database, every 4th blocked
    }

    static func start(pageSize: Int = 1000) async throws -> Loop {
        let root = try temporaryDirectory()
        let numbers = (0..<120).map { "+1415555\(String(format: "%04d", $0))" }
        let csv = "keyword,value\n" + numbers.enumerated().map { "\($1),\($0 % 4 == 0 ? "01" : "00")\n" }.joined()
        try csv.write(toFile: "\(root)/block.csv", atomically: true, encoding: .utf8)
        let options = DatasetManifest.Options(preset: "n_4096_logq_27_28_28_logt_5", shardCount: 2, fixedBucketCount: 128)
        _ = try DatasetBuilder(options: options, directory: "\(root)/block", stem: "block", threads: 1).build(input: "\(root)/block.csv")
        let manifest = "\(root)/block/block.manifest.json"
        let config = try writeServiceConfig(in: root, usecases: [.init(name: "block", manifest: manifest, versionCount: 2)]) { config in
            config.users.append(.init(tier: "reporters", tokens: reporters))
            var reports = ServiceConfig.Reports(policy: ReportPolicy(minJunkReporters: 5, minJunkShare: 0.8))
            reports.reportsPerHour = 3600
            reports.reportBurst = 50
            config.reports = reports
            config.callDirectory = .init(maxEntriesPerPage: pageSize)
        }
        return Loop(root: root, server: try await TestServer.start(configPath: config), manifest: manifest, numbers: numbers)
    }

    static func credential(_ server: TestServer, _ token: String) async throws -> String {
        let answer = try await server.http.send(path: "/reporter-credential", headers: [("Authorization", "Bearer \(token)")], body: [])
        #expect(answer.status == 200)
        let object = try JSONDecoder().decode([String: String].self, from: Data(answer.body))
        return try #require(object["reporter"])
    }

    static func reportBody(credential: String, number: String, action: String, reportID: String = UUID().uuidString) -> [UInt8] {
        Array("""
            {"_version":1,"classification":"\(action)","app":{"reporter":"\(credential)","reportId":"\(reportID)","number":"\(number)","channel":"call","category":"telemarketing","note":"kept, never logged"}}
            """.utf8)
    }

    static func report(_ server: TestServer, _ body: [UInt8]) async throws -> (status: Int, body: String) {
        let answer = try await server.http.send(path: "/classification-report", headers: [("Content-Type", "application/json")], body: body)
        return (answer.status, String(decoding: answer.body, as: UTF8.self))
    }

    /// Reports from `reporters` on `number`, all at once.
    static func reportAll(_ server: TestServer, _ credentials: [String], number: String, action: String) async throws {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for credential in credentials {
                group.addTask { try await report(server, reportBody(credential: credential, number: number, action: action)).status }
            }
            for try await status in group { #expect(status == 200) }
        }
    }

    struct FeedPage: Decodable {
        struct Addition: Decodable { var number: Int64; var label: String? }
        var version: Int
        var additions: [Addition]
        var removals: [Int64]
        var next: Int64?
    }

    static func feed(_ server: TestServer, _ query: String, headers: [(String, String)] = []) async throws -> (status: Int, headers: [(String, String)], page: FeedPage?) {
        let answer = try await server.http.exchange(method: .GET, path: "/call-directory/\(query)", headers: headers, body: nil)
        // The client decompresses gzip bodies itself (and keeps the Content-Encoding header).
        return (answer.status, answer.headers, answer.status == 200 ? try JSONDecoder().decode(FeedPage.self, from: Data(answer.body)) : nil)
    }

    /// Publishes, updates the database, reloads; meanwhile a phone looks the database's own numbers up and every
    /// answer must be the dataset's.
    static func publishUnderLoad(_ loop: Loop) async throws -> (DirectoryPublication, BlockListPublisher.Update) {
        let store = try #require(loop.server.server.feeds.store)
        let publisher = BlockListPublisher(store: store, policy: ReportPolicy(minJunkReporters: 5, minJunkShare: 0.8))
        let stop = Tally(), checked = Tally()
        let device = loop.server.device()
        let load = Task {
            var i = 0
            while stop.count == 0 {
                let index = (i * 7) % loop.numbers.count
                let value = try await device.lookup(Array(loop.numbers[index].utf8), in: "block")
                #expect(value == [index % 4 == 0 ? 1 : 0], "lookup of a listed number during the update")
                checked.add()
                i += 1
            }
        }
        let publication = try await publisher.publish()
        let update = try await publisher.update(manifest: loop.manifest)
        #expect(try await loop.server.server.reload().isEmpty)
        try await Task.sleep(for: .milliseconds(200))
        stop.add()
        try await load.value
        #expect(checked.count > 0)
        return (publication, update)
    }

    @Test("junk reports cross the threshold → blocked by PIR and listed by the feed; not-junk majority and manual reject remove")
    func loop() async throws {
        let loop = try await Self.start()
        defer { Task { await loop.server.stop() } }
        let server = loop.server
        var credentials: [String] = []
        for token in Self.reporters { credentials.append(try await Self.credential(server, token)) }
        #expect(Set(credentials).count == Self.reporters.count, "one pseudonym per account")
        #expect(try await Self.credential(server, "R0") == credentials[0], "issuing is idempotent")
        let target = "+14155559999", target64: Int64 = 14155559999
        #expect(try await server.device().lookup(Array(target.utf8), in: "block") == nil)

        // Four junk reporters: below the threshold of five.
        try await Self.reportAll(server, Array(credentials[0..<4]), number: target, action: "reportJunk")
        // A replay of one of them counts once.
        let replay = Self.reportBody(credential: credentials[0], number: target, action: "reportJunk", reportID: "replayed-1")
        #expect(try await Self.report(server, replay).body.contains("\"duplicate\""), "same verdict again: nothing changes")
        #expect(try await Self.report(server, replay).body.contains("\"duplicate\""))
        var (publication, update) = try await Self.publishUnderLoad(loop)
        #expect(publication.version == 0 && update.to == 0)
        let store = try #require(server.server.feeds.store)
        #expect(try await store.aggregates(minReporters: 1, limit: 10).first?.junk == 4)

        // The fifth crosses it.
        try await Self.reportAll(server, Array(credentials[4..<6]), number: target, action: "reportJunkAndBlockSender")
        (publication, update) = try await Self.publishUnderLoad(loop)
        #expect(publication.version == 1 && publication.additions == [target64])
        #expect(update.from == 0 && update.to == 1 && update.blocked == 1)
        #expect(try await server.device().lookup(Array(target.utf8), in: "block") == [1], "the phone now gets blocked")
        let entries = try await store.entries(.blocking, version: 1)
        #expect(entries.map(\.reason) == ["reports: 6 junk, 0 not junk"])
        var page = try await Self.feed(server, "blocking?since=0", headers: [("Accept-Encoding", "gzip")])
        #expect(page.status == 200 && page.page?.version == 1 && page.page?.additions.map(\.number) == [target64] && page.page?.removals == [])
        #expect(page.headers.contains { $0.0.lowercased() == "content-encoding" && $0.1 == "gzip" })
        let etag = try #require(page.headers.first { $0.0.lowercased() == "etag" }?.1)
        #expect(try await Self.feed(server, "blocking?since=0", headers: [("If-None-Match", etag)]).status == 304)

        // Publishing again changes nothing: the database already applies version 1.
        (publication, update) = try await Self.publishUnderLoad(loop)
        #expect(update.from == 1 && update.to == 1 && update.blocked == 0)
        #expect(try await server.device().lookup(Array(target.utf8), in: "block") == [1])

        // Not-junk majority: ten reporters say not junk; 6 of 16 is under 80 % junk.
        try await Self.reportAll(server, Array(credentials[6..<16]), number: target, action: "reportNotJunk")
        (publication, update) = try await Self.publishUnderLoad(loop)
        #expect(publication.version == 2 && publication.removals == [target64] && update.unblocked == 1)
        #expect(try await server.device().lookup(Array(target.utf8), in: "block") == nil, "unblocked: not in the curated data, so out of the database")
        page = try await Self.feed(server, "blocking?since=1")
        #expect(page.page?.removals == [target64] && page.page?.additions.isEmpty == true)

        // A database number with six junk reports, then a manual reject; a manual confirm without reports.
        let listed = loop.numbers[1], listed64 = DirectoryEntry.phoneNumber(e164: listed)!
        try await Self.reportAll(server, Array(credentials[0..<6]), number: listed, action: "reportJunk")
        let confirmed = "+14155558888", confirmed64: Int64 = 14155558888
        try await store.decide(number: confirmed, action: .confirm, note: "fraud ring, ticket 42", at: Date().timeIntervalSince1970)
        (publication, update) = try await Self.publishUnderLoad(loop)
        #expect(publication.version == 3 && Set(publication.additions) == [listed64, confirmed64])
        #expect(try await server.device().lookup(Array(listed.utf8), in: "block") == [1])
        #expect(try await server.device().lookup(Array(confirmed.utf8), in: "block") == [1])
        #expect(try await store.entries(.blocking, version: 3).first { $0.number == confirmed64 }?.reason == "manual: fraud ring, ticket 42")
        try await store.decide(number: listed, action: .reject, note: "our own support line", at: Date().timeIntervalSince1970)
        (publication, update) = try await Self.publishUnderLoad(loop)
        #expect(publication.version == 4 && publication.removals == [listed64])
        #expect(try await server.device().lookup(Array(listed.utf8), in: "block") == [0])
        page = try await Self.feed(server, "blocking?since=3")
        #expect(page.page?.removals == [listed64] && page.page?.additions.isEmpty == true)
        page = try await Self.feed(server, "blocking")
        #expect(page.page?.version == 4 && page.page?.additions.map(\.number) == [confirmed64], "the full list at the newest version")
        let metrics = String(decoding: try await server.admin.send(method: .GET, path: "/metrics", headers: [], body: nil).body, as: UTF8.self)
        #expect(metrics.contains("callveil_reports_total"))
        #expect(!metrics.contains("never logged"))
    }

    /// The block answer of the first curated numbers (blocked and not) and of `extra`, looked up by a phone.
    static func answers(_ loop: Loop, extra: [String]) async throws -> [String: [UInt8]?] {
        let device = loop.server.device()
        var answers: [String: [UInt8]?] = [:]
        for number in Set(loop.numbers.prefix(4) + extra) { answers[number] = try await device.lookup(Array(number.utf8), in: "block") }
        return answers
    }

    /// What the merge rule says a number answers: blocked when the curated data blocks it or the list has it, else its
    /// curated value (nil when the curated data lacks it).
    static func expected(_ loop: Loop, curated: [String: [UInt8]], listed: Set<String>, numbers: [String]) -> [String: [UInt8]?] {
        var answers: [String: [UInt8]?] = [:]
        for number in numbers { answers[number] = listed.contains(number) ? [1] : curated[number] }
        return answers
    }

    @Test("the provider's curated blocks survive the report list: leaving the list restores the curated value; a full rebuild and a reset store keep the rule")
    func curatedBlocksSurvive() async throws {
        let loop = try await Self.start()
        defer { Task { await loop.server.stop() } }
        let store = try #require(loop.server.server.feeds.store)
        let publisher = BlockListPublisher(store: store, policy: ReportPolicy(minJunkReporters: 5, minJunkShare: 0.8))
        var curated: [String: [UInt8]] = [:]
        for (i, number) in loop.numbers.enumerated() { curated[number] = [i % 4 == 0 ? 1 : 0] }
        let curatedBlocked = loop.numbers[0], curatedOpen = loop.numbers[1], absent = "+14155557777", other = loop.numbers[4]
        #expect(curated[curatedBlocked] == [1] && curated[other] == [1] && curated[curatedOpen] == [0])
        let watched = [curatedBlocked, curatedOpen, absent, other]
        func check(_ listed: Set<String>, _ what: String) async throws {
            #expect(try await loop.server.server.reload().isEmpty)
            let got = try await Self.answers(loop, extra: watched)
            let want = Self.expected(loop, curated: curated, listed: listed, numbers: Array(got.keys))
            for number in got.keys.sorted() { #expect(got[number]! == want[number]!, "\(what): \(number) answers \(String(describing: got[number]!))") }
            let feed = Set(try await store.entries(.blocking, version: try await store.currentVersion(.blocking)).map { DirectoryEntry.e164($0.number) })
            #expect(feed == listed, "\(what): the feed lists the applied list")
        }
        func publish() async throws { _ = try await publisher.publish(); _ = try await publisher.update(manifest: loop.manifest) }
        let now = Date().timeIntervalSince1970
        for number in [curatedBlocked, curatedOpen, absent] { try await store.decide(number: number, action: .confirm, note: "t", at: now) }
        try await publish()
        try await check([curatedBlocked, curatedOpen, absent], "confirmed")
        for number in [curatedBlocked, curatedOpen, absent] { try await store.decide(number: number, action: nil, note: "", at: now) }
        try await publish()
        try await check([], "cleared: the curated block stays, the others get their curated value back")

        // A full curated update (the same input, as an hourly `process-db --input` is) keeps the applied list.
        try await store.decide(number: curatedOpen, action: .confirm, note: "t", at: now)
        try await store.decide(number: absent, action: .confirm, note: "t", at: now)
        try await publish()
        let builder = DatasetBuilder(options: try DatasetManifest.read(path: loop.manifest).options, directory: "\(loop.root)/block",
                                     stem: "block", threads: 1)
        _ = try builder.build(input: "\(loop.root)/block.csv", previous: try DatasetBuilder.Previous(manifestPath: loop.manifest))
        try await check([curatedOpen, absent], "after a full rebuild")
        // The curated data itself changes under the list: the listed number's new curated value is kept for later.
        try "op,keyword,value\nchange,\(curatedOpen),01\nchange,\(other),00\n".write(toFile: "\(loop.root)/delta.csv", atomically: true, encoding: .utf8)
        _ = try builder.apply(delta: "\(loop.root)/delta.csv", to: try DatasetBuilder.Previous(manifestPath: loop.manifest))
        curated[curatedOpen] = [1]
        curated[other] = [0]
        try await check([curatedOpen, absent], "after a curated delta")
        // A rebuild without a previous version, into the same folder, keeps the list too.
        try (["keyword,value"] + loop.numbers.map { "\($0),\(curated[$0]!.hexString)" }).joined(separator: "\n")
            .write(toFile: "\(loop.root)/block2.csv", atomically: true, encoding: .utf8)
        _ = try builder.build(input: "\(loop.root)/block2.csv")
        try await check([curatedOpen, absent], "after a rebuild from nothing")

        // The report store is reset (a new, empty store: version numbers start again): the list follows it.
        let fresh = try SQLiteReportStore(path: "\(loop.root)/fresh-reports.sqlite")
        try await fresh.decide(number: other, action: .confirm, note: "t", at: now)
        let again = BlockListPublisher(store: fresh, policy: ReportPolicy())
        _ = try await again.publish()
        let update = try await again.update(manifest: loop.manifest)
        #expect(update.to == 1 && update.blocked == 1 && update.unblocked == 2)
        #expect(try await loop.server.server.reload().isEmpty)
        let got = try await Self.answers(loop, extra: watched)
        let want = Self.expected(loop, curated: curated, listed: [other], numbers: Array(got.keys))
        for number in got.keys.sorted() { #expect(got[number]! == want[number]!, "reset store: \(number)") }
    }

    @Test("the feed pages a list in ascending order within the page size; a relabel is a removal and an addition on one page")
    func paging() async throws {
        let loop = try await Self.start(pageSize: 3)
        defer { Task { await loop.server.stop() } }
        let store = try #require(loop.server.server.feeds.store)
        let numbers: [Int64] = [14155550107, 14155550103, 14155550105, 14155550101, 14155550104, 14155550102, 14155550106]
        _ = try await store.publish(.identification, entries: numbers.map { DirectoryEntry(number: $0, label: "Caller \($0 % 100)", reason: "import") }, at: 1)
        var seen: [Int64] = []
        var after: Int64?
        var pages = 0
        repeat {
            let page = try await Self.feed(loop.server, "identification?version=1" + (after.map { "&after=\($0)" } ?? ""))
            let additions = try #require(page.page).additions
            #expect(additions.count <= 3 && additions.allSatisfy { $0.label == "Caller \($0.number % 100)" })
            seen += additions.map(\.number)
            after = page.page?.next
            pages += 1
        } while after != nil && pages < 10
        #expect(pages == 3 && seen == numbers.sorted())
        var relabelled = numbers.map { DirectoryEntry(number: $0, label: "Caller \($0 % 100)", reason: "import") }
        relabelled[0].label = "Pizza Place"
        let publication = try await store.publish(.identification, entries: relabelled, at: 2)
        #expect(publication.version == 2 && publication.additions == [numbers[0]] && publication.removals == [numbers[0]])
        let page = try #require(try await Self.feed(loop.server, "identification?since=1").page)
        #expect(page.removals == [numbers[0]] && page.additions.map(\.label) == ["Pizza Place"])
        #expect(try await store.publish(.identification, entries: relabelled, at: 3).version == 2, "publishing the same list again is no new version")
    }
}
