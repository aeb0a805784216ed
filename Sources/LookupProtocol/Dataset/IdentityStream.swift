import Foundation
import PIR

/// `build-db` for inputs of any size: reads the identities CSV once and writes the block and identity keyword
/// CSVs (`number,hexvalue`) as it goes, so memory does not grow with the dataset (a set of 64-bit number
/// hashes finds duplicates: 16 bytes per number).
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

    /// Streams `input` (identities CSV) into `blockPath` and `identityPath`; icons come from `icons/<number>.heic`.
    /// Rows with problems are skipped and reported; the caller decides whether any problem fails the build.
    public static func build(input: String, blockPath: String, identityPath: String, icons: String?,
                             progress: (Int, Int) -> Void = { _, _ in }) throws -> Summary {
        var reader = try LineReader(path: input)
        let block = try BufferedFileWriter(path: blockPath)
        let identity = try BufferedFileWriter(path: identityPath)
        try block.write("keyword,value\n")
        try identity.write("keyword,value\n")
        var summary = Summary()
        var seen: [UInt64: Int] = [:]
        func problem(_ p: DatasetProblem) {
            summary.problemCount += 1
            if summary.problems.count < 100 { summary.problems.append(p) }
        }
        let size = reader.size
        _ = try reader.forEachLine(progress: { progress($0, size) }) { line, bytes in
            switch IdentityDataset.parseCSVLine(Substring(decoding: bytes, as: UTF8.self), lineNumber: line) {
            case .success(nil): return
            case .failure(let p): problem(p)
            case .success(var record?):
                let hash = KeywordHash.hash(Array(record.number.utf8))
                if let first = seen[hash] {
                    return problem(DatasetProblem(line: line, "\(record.number) repeats the number of line \(first)"))
                }
                seen[hash] = line
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
        }
        try block.close()
        try identity.close()
        return summary
    }
}
