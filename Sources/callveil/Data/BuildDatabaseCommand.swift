import ArgumentParser
import Dataset
import Foundation
import LookupProtocol

/// `callveil build-db`: identities (text-format `InputIdentities` or CSV) → the block and identity keyword
/// databases that `process-db` takes.
struct BuildDatabaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build-db",
        abstract: "Build the block and identity keyword databases from a list of identities.",
        discussion: """
        Input: .txtpb (InputIdentities, text format) or .csv (number,name,category,block,cache_minutes).
        Numbers are normalized to E.164; icons are read from <icons>/<number>.heic (at most 64 KB).
        Output: <output>/block.binpb and <output>/identity.binpb (pir.v1.KeywordDatabase), or with --format csv
        <output>/block.csv and <output>/identity.csv (keyword CSVs for process-db), streamed in bounded memory
        for a CSV input of any size. Malformed and duplicate rows are listed; the command fails unless
        --skip-invalid is given, and then writes nothing.
        """)

    @Option(help: "Identities file (.txtpb or .csv).")
    var input: String

    @Option(help: "Output directory.")
    var output: String

    @Option(help: "Folder of <number>.heic icons.")
    var icons: String?

    @Flag(help: "Skip malformed and duplicate rows (each is still reported) instead of failing.")
    var skipInvalid = false

    @Option(help: "Output format: binpb (KeywordDatabase messages) or csv (streamed, any size).")
    var format: String = "binpb"

    func run() throws {
        guard format == "binpb" || format == "csv" else { throw ValidationError("format must be binpb or csv") }
        if format == "csv" { return try streamCSV() }
        let text = try String(contentsOfFile: input, encoding: .utf8)
        var (records, problems) = input.hasSuffix(".txtpb") ? IdentityDataset.parseTextProto(text) : IdentityDataset.parseCSV(text)
        let duplicates = IdentityDataset.duplicates(records)
        problems += duplicates
        if !duplicates.isEmpty {
            var seen = Set<String>()
            records = records.filter { seen.insert($0.number).inserted }
        }
        if let icons { problems += IdentityDataset.attachIcons(&records, directory: icons) }
        for problem in problems { writeStderr("\(input): \(problem)\n") }
        if !problems.isEmpty && !skipInvalid {
            throw ValidationError("\(problems.count) problem(s) in \(input); fix them or pass --skip-invalid")
        }
        let (block, identity) = try IdentityDataset.keywordDatabases(records)
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        try Data(try block.serializedBytes() as [UInt8]).write(to: URL(fileURLWithPath: "\(output)/block.binpb"))
        try Data(try identity.serializedBytes() as [UInt8]).write(to: URL(fileURLWithPath: "\(output)/identity.binpb"))
        let blocked = records.filter(\.block).count
        writeStderr("\(records.count) numbers (\(blocked) blocked, \(identity.rows.count) with an identity)"
                    + (problems.isEmpty ? "" : "; \(problems.count) row(s) skipped") + "; wrote \(output)/block.binpb and \(output)/identity.binpb\n")
    }

    /// `--format csv`: one pass over the input (CSV or `.txtpb`) into `block.csv` and `identity.csv`, moved into
    /// place only on success.
    func streamCSV() throws {
        guard input.hasSuffix(".csv") || input.hasSuffix(".txtpb") else { throw ValidationError("--format csv reads a .csv or .txtpb input") }
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let (block, identity) = ("\(output)/block.csv", "\(output)/identity.csv")
        var bar = ProgressBar(label: "reading identities", total: 1, unit: "B")
        let summary: IdentityStream.Summary
        do {
            summary = try IdentityStream.build(input: input, blockPath: block + ".tmp", identityPath: identity + ".tmp", icons: icons) { done, total in
                if bar.total != max(total, 1) { bar = ProgressBar(label: "reading identities", total: total, unit: "B") }
                bar.update(done)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: block + ".tmp")
            try? FileManager.default.removeItem(atPath: identity + ".tmp")
            throw error
        }
        for problem in summary.problems { writeStderr("\(input): \(problem)\n") }
        if summary.problemCount > summary.problems.count { writeStderr("\(input): … \(summary.problemCount - summary.problems.count) more problem(s)\n") }
        if summary.problemCount > 0 && !skipInvalid {
            try? FileManager.default.removeItem(atPath: block + ".tmp")
            try? FileManager.default.removeItem(atPath: identity + ".tmp")
            throw ValidationError("\(summary.problemCount) problem(s) in \(input); fix them or pass --skip-invalid")
        }
        guard rename(block + ".tmp", block) == 0, rename(identity + ".tmp", identity) == 0 else {
            throw ValidationError("cannot move the outputs into place (errno \(errno))")
        }
        writeStderr("\(summary.numbers) numbers (\(summary.blocked) blocked, \(summary.identities) with an identity)"
                    + (summary.problemCount == 0 ? "" : "; \(summary.problemCount) row(s) skipped") + "; wrote \(block) and \(identity)\n")
    }
}
