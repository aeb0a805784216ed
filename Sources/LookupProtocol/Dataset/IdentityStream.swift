import Foundation
import PIR

/// `build-db` for inputs of any size: reads the identities (CSV or text-format `InputIdentities`) once and writes the block and identity keyword
/// CSVs (`number,hexvalue`) as it goes, so memory does not grow with the dataset except for the table of 64-bit
/// number hashes that finds duplicates (12 bytes a slot, sized once from the input's size: about 16 bytes per
/// number).
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
    /// reported with their line numbers; the caller decides whether any problem fails the build.
    public static func build(input: String, blockPath: String, identityPath: String, icons: String?,
                             progress: (Int, Int) -> Void = { _, _ in }) throws -> Summary {
        var reader = try LineReader(path: input)
        let size = reader.size
        // Reserved once for the numbers the file can hold (~32 bytes a CSV line, ~128 a text-format entry), so the
        // table does not double while it is full.
        var sink = try Sink(blockPath: blockPath, identityPath: identityPath, icons: icons,
                            expected: size / (input.hasSuffix(".txtpb") ? 128 : 32))
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
                    for result in IdentityDataset.records(of: entry, line: first) {
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
                switch IdentityDataset.parseCSVLine(Substring(decoding: bytes, as: UTF8.self), lineNumber: line) {
                case .success(nil): return
                case .failure(let p): sink.problem(p)
                case .success(let record?): try sink.add(record, line: line)
                }
            }
        }
        return try sink.close()
    }

    /// Writes records to the two keyword CSVs, skipping (and reporting) repeated numbers.
    private struct Sink {
        let block: BufferedFileWriter
        let identity: BufferedFileWriter
        let icons: String?
        var summary = Summary()
        var seen: [UInt64: UInt32] = [:]

        init(blockPath: String, identityPath: String, icons: String?, expected: Int) throws {
            seen.reserveCapacity(min(max(expected, 1024), 1 << 30))
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
            let hash = KeywordHash.hash(Array(record.number.utf8))
            if let first = seen[hash] {
                return problem(DatasetProblem(line: line, "\(record.number) repeats the number of line \(first)"))
            }
            seen[hash] = UInt32(clamping: line)
            if let icons {
                var one = [record]
                for p in IdentityDataset.attachIcons(&one, directory: icons) { problem(p) }
                record = one[0]
            }
            try block.write("\(record.number),\(record.blockValue.hexString)\n")
            if let value = try record.callIdentity() {
                try identity.write("\(record.number),\(value.hexString)\n")
                summary.identities += 1
            }
            summary.numbers += 1
            if record.block { summary.blocked += 1 }
        }

        func close() throws -> Summary {
            try block.close()
            try identity.close()
            return summary
        }
    }
}
