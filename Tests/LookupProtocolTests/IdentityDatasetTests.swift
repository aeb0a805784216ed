import ConformanceSupport
import Dataset
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

    /// The Foundation-based normalization `normalize` replaced (it was 40% of `build-db`'s time): the model the
    /// scalar-based one must agree with.
    static func referenceNormalize(_ raw: String) -> String? {
        let kept = raw.trimmingCharacters(in: .whitespaces).filter { !" -.()".contains($0) }
        guard kept.first == "+" else { return nil }
        let digits = kept.dropFirst()
        guard digits.count >= 7, digits.count <= 15, digits.allSatisfy({ $0.isASCII && $0.isNumber }), digits.first != "0" else {
            return nil
        }
        return "+" + digits
    }

    @Test("Normalization and field trimming agree with the Foundation model on random text (Unicode spaces included)")
    func normalizationMatchesModel() {
        var rng = TestRandom()
        let alphabet: [String] = ["+", "+", "1", "2", "0", "9", "5", " ", "-", ".", "(", ")", "\t", "\u{A0}", "\u{2003}", "\u{3000}",
                                  "a", "٣", "\u{0303}", ",", "\u{200B}", "\n", "\u{1680}", "\u{180E}", "\u{FEFF}"]
        var accepted = 0
        for _ in 0..<20_000 {
            let digits = (0..<Int.random(in: 6...16, using: &rng)).map { _ in String(Int.random(in: 0...9, using: &rng)) }.joined()
            var text = Bool.random(using: &rng) ? "+" + digits : ""
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                let at = text.index(text.startIndex, offsetBy: Int.random(in: 0...text.count, using: &rng))
                text.insert(contentsOf: alphabet.randomElement(using: &rng)!, at: at)
            }
            let expected = Self.referenceNormalize(text)
            #expect(IdentityDataset.normalize(text) == expected, "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
            if expected != nil { accepted += 1 }
            let line = text + "," + text + ",PERSON,1,5"
            if case .success(let record?) = IdentityDataset.parseCSVLine(Substring(line), lineNumber: 2) {
                #expect(record.name == text.trimmingCharacters(in: .whitespaces))
            }
        }
        print("normalization model: \(accepted) of 20000 random texts accepted")
        #expect(accepted > 1000)
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

    @Test("CSV fields quoted as RFC 4180 quotes them: commas and doubled quotes inside, an unclosed quote reported")
    func quotedFields() {
        #expect(CSVField.split(#"+14155550101, "Acme, Inc." ,business,0,60"#) == ["+14155550101", "Acme, Inc.", "business", "0", "60"])
        #expect(CSVField.split(#""The ""Best"" Pizza",,"""#) == [#"The "Best" Pizza"#, "", ""])
        #expect(CSVField.split("a,b,") == ["a", "b", ""])
        #expect(CSVField.split(#""unclosed, x"#) == nil)
        #expect(CSVField.split(#""a"b,c"#) == nil)
        let csv = "number,name,category,block,cache_minutes\n+14155550101,\"Acme, Inc.\",business,0,60\n+14155550102,\"Bob \"\"B\"\" Jones\",person,1,5\n+14155550103,\"open,person,0,5\n"
        let (records, problems) = IdentityDataset.parseCSV(csv)
        #expect(records.map(\.name) == ["Acme, Inc.", #"Bob "B" Jones"#])
        #expect(problems.map(\.line) == [4] && problems.first?.description.contains("quoted field") == true)
    }

    @Test("--default-region reads numbers written without + as national numbers of the region")
    func defaultRegion() throws {
        let us = try #require(DefaultRegion("US")), gb = try #require(DefaultRegion("gb")), it = try #require(DefaultRegion("IT"))
        #expect(IdentityDataset.normalize("(415) 555-0101", region: us) == "+14155550101")
        #expect(IdentityDataset.normalize("1 415 555 0101", region: us) == "+14155550101")
        #expect(IdentityDataset.normalize("011 44 20 7946 0000", region: us) == "+442079460000")
        #expect(IdentityDataset.normalize("555-0101", region: us) == nil)
        #expect(IdentityDataset.normalize("020 7946 0000", region: gb) == "+442079460000")
        #expect(IdentityDataset.normalize("0033 1 23 45 67 89", region: gb) == "+33123456789")
        #expect(IdentityDataset.normalize("06 1234 5678", region: it) == "+390612345678", "Italian numbers keep their 0")
        #expect(IdentityDataset.normalize("020 7946 0000", region: try #require(DefaultRegion("+44"))) == "+442079460000")
        #expect(IdentityDataset.normalize("+49 30 123456", region: us) == "+4930123456", "a number with + is international whatever the region")
        #expect(IdentityDataset.normalize("(415) 555-0101") == nil, "without a region a national number is refused")
        #expect(DefaultRegion("XX") == nil && DefaultRegion("+0") == nil && DefaultRegion("+1234") == nil)
        let (records, problems) = IdentityDataset.parseCSV("(415) 555-0101,Ada,person,1,5\n", region: us)
        #expect(records.map(\.number) == ["+14155550101"] && problems.isEmpty)
    }

    @Test("An icon that makes its identity larger than a PIR row holds is reported with its number, at 65,536 bytes too")
    func iconThatDoesNotFit() throws {
        let directory = NSTemporaryDirectory() + "callveil-icons-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(repeating: 0xAB, count: 65_536).write(to: URL(fileURLWithPath: "\(directory)/+14364967678.heic"))
        try Data(repeating: 0xCD, count: 65_400).write(to: URL(fileURLWithPath: "\(directory)/+12412306542.heic"))
        var records = ["+14364967678", "+12412306542"].map {
            IdentityRecord(number: $0, name: "Acme", category: .business, block: false, cacheExpiryMinutes: 60)
        }
        let problems = IdentityDataset.attachIcons(&records, directory: directory)
        #expect(records.map { $0.icon?.count } == [nil, 65_400])
        #expect(problems.count == 1 && problems[0].description.contains("+14364967678's identity 65"), "\(problems)")
        #expect(try #require(try records[1].callIdentity()).count <= IdentityDataset.maxIdentityBytes)
    }

    @Test("Icons are attached from <number>.heic; oversized icons are reported")
    func icons() throws {
        let directory = NSTemporaryDirectory() + "callveil-icons-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
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

    /// The keyword CSV lines (`number,hexvalue`) build-db writes for records, sorted, without the header.
    static func keywordLines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").dropFirst().map(String.init).sorted()
    }

    @Test("Text-format InputIdentities streams entry by entry: the same rows as the whole-file parse, problems with lines")
    func streamedTextProto() throws {
        var rng = TestRandom()
        let directory = NSTemporaryDirectory() + "callveil-txtpb-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Entries in the layouts the text format allows: the library's own, one line, angle brackets, comments,
        // several entries on a line, names with quotes, braces and '#' inside strings.
        var chunks: [String] = ["# CallVeil test identities\n"]
        var whole = ProtoInputIdentities()
        for i in 0..<3000 {
            var value = InputCallIdentity()
            value.name = ["Ada", "Shop \"{#1}\"", "Café <Ω>", "", "O'Brien's # 2"][i % 5] + " \(i)"
            value.block = Int.random(in: 0..<7, using: &rng) == 0
            value.category = [.person, .business, .unspecified][i % 3]
            value.cacheExpiryMinutes = UInt32.random(in: 0...60, using: &rng)
            let number = "+1" + String(2_000_000_000 + i * 7919)
            whole.identities[number] = value
            var one = ProtoInputIdentities()
            one.identities[number] = value
            let canonical = one.textFormatString()
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: chunks.append(canonical)
            case 1: chunks.append(canonical.replacingOccurrences(of: "\n", with: " ") + (Bool.random(using: &rng) ? " " : "\n"))
            case 2: chunks.append(canonical.replacingOccurrences(of: " {\n", with: " <\n").replacingOccurrences(of: "}\n", with: ">\n"))
            default: chunks.append("# entry \(i) {\n" + canonical)
            }
        }
        let text = chunks.joined()
        try text.write(toFile: "\(directory)/ids.txtpb", atomically: true, encoding: .utf8)
        let summary = try IdentityStream.build(input: "\(directory)/ids.txtpb", blockPath: "\(directory)/s-block.csv",
                                               identityPath: "\(directory)/s-identity.csv", icons: nil)
        #expect(summary.problemCount == 0, "\(summary.problems)")
        #expect(summary.numbers == 3000)
        // The whole-file parse of the same text (the in-memory path) gives the same rows.
        let (records, problems) = IdentityDataset.parseTextProto(text)
        #expect(problems.isEmpty && records.count == 3000)
        let expectedBlock = records.map { "\($0.number),\($0.blockValue.hexString)" }.sorted()
        let expectedIdentity = try records.compactMap { r in try r.callIdentity().map { "\(r.number),\($0.hexString)" } }.sorted()
        #expect(try Self.keywordLines("\(directory)/s-block.csv") == expectedBlock)
        #expect(try Self.keywordLines("\(directory)/s-identity.csv") == expectedIdentity)

        // Problems carry the line of their entry; the good entries around them are kept.
        let bad = """
            identities { key: "+14155550100" value { name: "ok" block: true } }
            identities {
              key: "555-0101" value { name: "not E.164" }
            }
            identities { key: "+14155550102" value { nme: "typo" } }
            } identities { key: "+14155550103" value { name: "after a stray bracket" } }
            identities { key: "+14155550100" value { name: "again" } }
            identities { key: "+14155550104"
              value { name: "never closed"
            """
        try bad.write(toFile: "\(directory)/bad.txtpb", atomically: true, encoding: .utf8)
        let report = try IdentityStream.build(input: "\(directory)/bad.txtpb", blockPath: "\(directory)/b-block.csv",
                                              identityPath: "\(directory)/b-identity.csv", icons: nil)
        let lines = report.problems.compactMap(\.line)
        print("txtpb problems: \(report.problems)")
        #expect(lines == [2, 5, 6, 7, 8], "\(report.problems)")
        #expect(try Self.keywordLines("\(directory)/b-block.csv") == ["+14155550100,01"])
    }

    @Test("streamed CSV: repeated numbers keep their first row, are reported with both lines, and leave no spill behind")
    func streamedDuplicates() throws {
        let directory = NSTemporaryDirectory() + "callveil-dups-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var csv = "number,name,category,block,cache_minutes\n"
        for i in 0..<2000 { csv += "+1415555\(String(format: "%04d", i)),Name \(i),PERSON,\(i % 7 == 0 ? 1 : 0),5\n" }
        csv += "+14155550007,Again,PERSON,0,5\n"   // line 2002: repeats line 9 (blocked, named)
        csv += "+14155551999,,,1,0\n"               // line 2003: repeats line 2001, without an identity
        csv += "+14155550007,,,0,0\n"               // line 2004: repeats line 9 again
        try csv.write(toFile: "\(directory)/ids.csv", atomically: true, encoding: .utf8)
        let summary = try IdentityStream.build(input: "\(directory)/ids.csv", blockPath: "\(directory)/block.csv",
                                               identityPath: "\(directory)/identity.csv", icons: nil)
        #expect(summary.problems.map(\.line) == [2002, 2003, 2004], "\(summary.problems)")
        #expect(summary.problems[0].description.contains("+14155550007 repeats the number of line 9"))
        #expect(summary.problems[1].description.contains("line 2001"))
        #expect(summary.numbers == 2000 && summary.identities == 2000 && summary.blocked == (0..<2000).filter { $0 % 7 == 0 }.count)
        let block = try Self.keywordLines("\(directory)/block.csv")
        let identity = try Self.keywordLines("\(directory)/identity.csv")
        #expect(block.count == 2000 && identity.count == 2000)
        #expect(block.contains("+14155550007,01") && !block.contains("+14155550007,00"), "the first row of a repeated number is kept")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["block.csv", "identity.csv", "ids.csv"])
    }
}
