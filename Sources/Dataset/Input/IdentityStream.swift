import LookupProtocol
import Foundation
import PIR

/// `build-db` for inputs of any size: reads the identities (CSV or text-format `InputIdentities`) once and writes the block and identity keyword
/// CSVs (`number,hexvalue`) as it goes, so memory does not grow with the dataset: repeated numbers are found
/// afterwards by `DuplicateFinder` (hashes spilled to partition files, each sorted alone) and, only when there
/// are some, taken out of the outputs in one more pass.
public enum IdentityStream {
    /// What a streamed build produced.
    public struct Summary: Sendable {
        /// Numbers written.
        public var numbers = 0
        /// Of them, blocked.
        public var blocked = 0
        /// Of them, with an identity row.
        public var identities = 0
        /// Problems (first 100 kept) and how many there were.
        public var problems: [DatasetProblem] = []
        /// Count of problems.
        public var problemCount = 0
    }

    /// Streams `input` (an identities CSV, or text-format `InputIdentities` when it ends in `.txtpb`) into
    /// `blockPath` and `identityPath`; icons come from `icons/<number>.heic`. Rows with problems are skipped and
    /// reported with their line numbers; the caller decides whether any problem fails the build. `region` reads
    /// numbers written without `+` as national numbers.
    public static func build(input: String, blockPath: String, identityPath: String, icons: String?, region: DefaultRegion? = nil,
                             progress: (Int, Int) -> Void = { _, _ in }) throws -> Summary {
        var reader = try LineReader(path: input)
        let size = reader.size
        let spill = blockPath + ".numbers"
        defer { try? FileManager.default.removeItem(atPath: spill) }
        var sink = try Sink(blockPath: blockPath, identityPath: identityPath, icons: icons, spill: spill)
        if input.hasSuffix(".txtpb") {
            var splitter = TextProtoEntrySplitter()
            _ = try reader.forEachLine(progress: { progress($0, size) }) { line, bytes in
                let problem = try splitter.feed(line: line, bytes) { first, text in
                    let entry: InputIdentities
                    do {
                        entry = try InputIdentities(textFormatString: String(decoding: text, as: UTF8.self))
                    } catch {
                        return sink.problem(DatasetProblem(line: first, "not a text-format InputIdentities entry: \(error)"))
                    }
                    for result in IdentityDataset.records(of: entry, line: first, region: region) {
                        switch result {
                        case .success(let record): try sink.add(record, line: first)
                        case .failure(let problem): sink.problem(problem)
                        }
                    }
                }
                if let problem { sink.problem(problem) }
            }
            if let (line, _) = splitter.unfinished { sink.problem(DatasetProblem(line: line, "the file ends inside this entry")) }
        } else {
            _ = try reader.forEachLine(progress: { progress($0, size) }) { line, bytes in
                switch IdentityDataset.parseCSVLine(Substring(decoding: bytes, as: UTF8.self), lineNumber: line, region: region) {
                case .success(nil): return
                case .failure(let p): sink.problem(p)
                case .success(let record?): try sink.add(record, line: line)
                }
            }
        }
        return try sink.close()
    }

    /// Writes records to the two keyword CSVs; at the end, takes repeated numbers out again (keeping the first)
    /// and reports them.
    private struct Sink {
        let block: BufferedFileWriter
        let identity: BufferedFileWriter
        let icons: String?
        let numbers: DuplicateFinder
        var summary = Summary()
        var blockLines: UInt32 = 0
        var identityLines: UInt32 = 0

        init(blockPath: String, identityPath: String, icons: String?, spill: String) throws {
            numbers = try DuplicateFinder(directory: spill)
            block = try BufferedFileWriter(path: blockPath)
            identity = try BufferedFileWriter(path: identityPath)
            self.icons = icons
            try block.write("keyword,value\n")
            try identity.write("keyword,value\n")
        }

        mutating func problem(_ p: DatasetProblem) {
            summary.problemCount += 1
            if summary.problems.count < 100 { summary.problems.append(p) }
        }

        mutating func add(_ record: IdentityRecord, line: Int) throws {
            var record = record
            if let icons {
                var one = [record]
                for p in IdentityDataset.attachIcons(&one, directory: icons) { problem(p) }
                record = one[0]
            }
            try block.write("\(record.number),\(record.blockValue.hexString)\n")
            blockLines += 1
            var identityLine: UInt32 = 0
            if let value = try record.callIdentity() {
                try identity.write("\(record.number),\(value.hexString)\n")
                summary.identities += 1
                identityLines += 1
                identityLine = identityLines
            }
            summary.numbers += 1
            if record.block { summary.blocked += 1 }
            try numbers.add(.init(hash: KeywordHash.hash(Array(record.number.utf8)), line: UInt32(clamping: line), blockLine: blockLines,
                                  identityLine: identityLine, blocked: record.block))
        }

        mutating func close() throws -> Summary {
            try block.close()
            try identity.close()
            let repeats = try numbers.finish()
            guard !repeats.isEmpty else { return summary }
            let dropped = try Self.remove(lines: Set(repeats.map(\.occurrence.blockLine)), from: block.path)
            _ = try Self.remove(lines: Set(repeats.compactMap { $0.occurrence.identityLine == 0 ? nil : $0.occurrence.identityLine }),
                                from: identity.path)
            var found = summary.problems
            for r in repeats {
                summary.numbers -= 1
                if r.occurrence.blocked { summary.blocked -= 1 }
                if r.occurrence.identityLine != 0 { summary.identities -= 1 }
                summary.problemCount += 1
                let number = dropped[r.occurrence.blockLine] ?? "the number"
                if found.count < 200 {
                    found.append(DatasetProblem(line: Int(r.occurrence.line), "\(number) repeats the number of line \(r.firstLine)"))
                }
            }
            summary.problems = Array(found.sorted { ($0.line ?? 0) < ($1.line ?? 0) }.prefix(100))
            return summary
        }

        /// Rewrites a keyword CSV without the given 1-based data lines; returns their keywords by line.
        static func remove(lines: Set<UInt32>, from path: String) throws -> [UInt32: String] {
            guard !lines.isEmpty else { return [:] }
            var reader = try LineReader(path: path)
            let out = try BufferedFileWriter(path: path + ".dedup")
            var removed: [UInt32: String] = [:]
            _ = try reader.forEachLine { line, bytes in
                let data = UInt32(clamping: line - 1)  // line 1 is the header
                if line > 1, lines.contains(data) {
                    removed[data] = String(decoding: bytes.prefix { $0 != 44 }, as: UTF8.self)
                    return
                }
                try out.write(bytes)
                try out.write([10])
            }
            try out.close()
            guard rename(path + ".dedup", path) == 0 else {
                throw DatasetError.unreadable(path: path, why: "cannot replace (errno \(errno))")
            }
            return removed
        }
    }
}
