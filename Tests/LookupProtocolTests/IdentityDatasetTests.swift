import ConformanceSupport
import Foundation
import LookupProtocol
import Testing

/// `build-db`'s dataset reading: E.164 normalization, row problems with line numbers, duplicates, and the
/// block and identity databases, checked against the reference tool's output for the service dataset.
@Suite("Identity datasets (build-db)")
struct IdentityDatasetTests {
    @Test("Numbers normalize to E.164 or are rejected")
    func normalization() {
        #expect(IdentityDataset.normalize("+1 (436) 496-7678") == "+14364967678")
        #expect(IdentityDataset.normalize(" +44.20.7946.0018 ") == "+442079460018")
        for bad in ["14364967678", "+1-436-ABC-7678", "++14364967678", "+0123456789", "+123", "+1234567890123456", "", "+١٢٣٤٥٦٧٨٩"] {
            #expect(IdentityDataset.normalize(bad) == nil, "\(bad)")
        }
    }

    @Test("Malformed CSV rows and duplicates are reported with their lines, never dropped silently")
    func problems() {
        let csv = """
            number,name,category,block,cache_minutes
            +14364967678,Ada,PERSON,1,5
            4364967678,Bad,PERSON,0,5
            +12412306542,Shop,SHOP,0,5
            +12412306543,Shop,BUSINESS,maybe,5
            +12412306544,Shop,BUSINESS,0,-1
            +12412306545,too,few
            +1 436 496 7678,Ada again,PERSON,0,5
            """
        let (records, problems) = IdentityDataset.parseCSV(csv)
        #expect(records.map(\.number) == ["+14364967678", "+14364967678"])
        #expect(problems.map(\.line) == [3, 4, 5, 6, 7])
        #expect(problems[0].description.contains("not an E.164 number"))
        let duplicates = IdentityDataset.duplicates(records)
        #expect(duplicates.count == 1 && duplicates[0].description.contains("+14364967678"))
    }

    @Test("Icons are attached from <number>.heic; oversized icons are reported")
    func icons() throws {
        let directory = NSTemporaryDirectory() + "callveil-icons-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(repeating: 0xAB, count: 1000).write(to: URL(fileURLWithPath: "\(directory)/+14364967678.heic"))
        try Data(repeating: 0xCD, count: IdentityDataset.maxIconBytes + 1).write(to: URL(fileURLWithPath: "\(directory)/+12412306542.heic"))
        var records = ["+14364967678", "+12412306542", "+12412306543"].map {
            IdentityRecord(number: $0, name: "n", category: .person, block: false, cacheExpiryMinutes: 1)
        }
        let problems = IdentityDataset.attachIcons(&records, directory: directory)
        #expect(records.map { $0.icon?.count } == [1000, nil, nil])
        #expect(problems.count == 1 && problems[0].description.contains("exceeds"))
        let identity = try CallIdentity(serializedBytes: try #require(try records[0].callIdentity()))
        #expect(identity.icon.format == .heic && identity.icon.image.count == 1000)
    }

    @Test("The service dataset builds into the reference tool's block and identity rows (CSV and text proto)",
          .enabled(if: Conformance.available, Comment(rawValue: Conformance.skipMessage)))
    func referenceRows() throws {
        let dataset = Conformance.root!.appendingPathComponent("service/dataset")
        func rows(_ file: String) throws -> Set<String> {
            let text = try String(contentsOf: dataset.appendingPathComponent(file), encoding: .utf8)
            return Set(text.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("keyword") })
        }
        func ours(_ db: ProtoKeywordDatabase) -> Set<String> {
            Set(db.rows.map { String(decoding: $0.keyword, as: UTF8.self) + "," + $0.value.map { String(format: "%02x", $0) }.joined() })
        }
        let csv = IdentityDataset.parseCSV(try String(contentsOf: dataset.appendingPathComponent("identities.csv"), encoding: .utf8))
        let text = IdentityDataset.parseTextProto(try String(contentsOf: dataset.appendingPathComponent("input.txtpb"), encoding: .utf8))
        #expect(csv.problems.isEmpty && text.problems.isEmpty)
        for (name, records) in [("identities.csv", csv.records), ("input.txtpb", text.records)] {
            #expect(records.count == 300)
            let (block, identity) = try IdentityDataset.keywordDatabases(records)
            #expect(ours(block) == (try rows("block-rows.csv")), "\(name): block rows")
            #expect(ours(identity) == (try rows("identity-rows.csv")), "\(name): identity rows")
            print("checked service/dataset/\(name): \(block.rows.count) block rows and \(identity.rows.count) identity rows equal the reference's")
        }
    }
}
