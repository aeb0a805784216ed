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
        Input: .txtpb (InputIdentities, text format) or .csv (number,name,category,block,cache_minutes; fields may be
        quoted as RFC 4180 does, "Acme, Inc."). Numbers are normalized to E.164 (national ones with --default-region); icons are read from <icons>/<number>.heic (at most 64 KB).
        Output: <output>/block.binpb and <output>/identity.binpb (pir.v1.KeywordDatabase), or with --format csv
        <output>/block.csv and <output>/identity.csv (keyword CSVs for process-db), streamed in bounded memory
        for a CSV input of any size. Malformed and duplicate rows are listed; the command fails unless
        --skip-invalid is given, and then writes nothing. An identity (name and icon together) must fit the 65,535
        bytes of a PIR row. Exit status: 64 bad usage, 65 bad data, 66 an unreadable input, 74 an unwritable output.
        """)

    @Option(help: "Identities file (.txtpb or .csv).")
    var input: String

    @Option(help: "Output directory.")
    var output: String

    @Option(help: "Folder of <number>.heic icons.")
    var icons: String?

    @Flag(help: "Skip malformed and duplicate rows (each is still reported) instead of failing.")
    var skipInvalid = false

    @Option(help: "Read numbers written without + as national numbers of this region: an ISO 3166 code (US, GB, DE, …) or a calling code (+44).")
    var defaultRegion: String?

    @Option(help: "Output format: binpb (KeywordDatabase messages) or csv (streamed, any size).")
    var format: String = "binpb"

    func run() throws {
        guard format == "binpb" || format == "csv" else { throw ValidationError("format must be binpb or csv") }
        let region = try defaultRegion.map { name in
            guard let region = DefaultRegion(name) else { throw ValidationError("--default-region: unknown region \(name); give an ISO 3166 code such as US, or a calling code such as +44") }
            return region
        }
        if format == "csv" { return try streamCSV(region: region) }
        let text: String
        do { text = try String(contentsOfFile: input, encoding: .utf8) } catch {
            throw DataExitStatus.fail("cannot read \(input) as UTF-8 text: \(error.localizedDescription)", status: DataExitStatus.noInput)
        }
        var (records, problems) = input.hasSuffix(".txtpb") ? IdentityDataset.parseTextProto(text, region: region) : IdentityDataset.parseCSV(text, region: region)
        let duplicates = IdentityDataset.duplicates(records)
        problems += duplicates
        if !duplicates.isEmpty {
            var seen = Set<String>()
            records = records.filter { seen.insert($0.number).inserted }
        }
        if let icons { problems += IdentityDataset.attachIcons(&records, directory: icons) }
        for problem in problems { writeStderr("\(input): \(problem)\n") }
        if !problems.isEmpty && !skipInvalid {
            throw DataExitStatus.fail("\(problems.count) problem(s) in \(input); fix them or pass --skip-invalid", status: DataExitStatus.badData)
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
    func streamCSV(region: DefaultRegion?) throws {
        guard input.hasSuffix(".csv") || input.hasSuffix(".txtpb") else { throw ValidationError("--format csv reads a .csv or .txtpb input") }
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let (block, identity) = ("\(output)/block.csv", "\(output)/identity.csv")
        var bar = ProgressBar(label: "reading identities", total: 1, unit: "B")
        let summary: IdentityStream.Summary
        do {
            summary = try IdentityStream.build(input: input, blockPath: block + ".tmp", identityPath: identity + ".tmp", icons: icons, region: region) { done, total in
                if bar.total != max(total, 1) { bar = ProgressBar(label: "reading identities", total: total, unit: "B") }
                bar.update(done)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: block + ".tmp")
            try? FileManager.default.removeItem(atPath: identity + ".tmp")
            guard let error = error as? DatasetError else { throw error }
            throw DataExitStatus.fail("\(error)", status: DataExitStatus.status(of: error))
        }
        for problem in summary.problems { writeStderr("\(input): \(problem)\n") }
        if summary.problemCount > summary.problems.count { writeStderr("\(input): … \(summary.problemCount - summary.problems.count) more problem(s)\n") }
        if summary.problemCount > 0 && !skipInvalid {
            try? FileManager.default.removeItem(atPath: block + ".tmp")
            try? FileManager.default.removeItem(atPath: identity + ".tmp")
            throw DataExitStatus.fail("\(summary.problemCount) problem(s) in \(input); fix them or pass --skip-invalid", status: DataExitStatus.badData)
        }
        guard rename(block + ".tmp", block) == 0, rename(identity + ".tmp", identity) == 0 else {
            throw DataExitStatus.fail("cannot move the outputs into place (errno \(errno))", status: DataExitStatus.cannotWrite)
        }
        writeStderr("\(summary.numbers) numbers (\(summary.blocked) blocked, \(summary.identities) with an identity)"
                    + (summary.problemCount == 0 ? "" : "; \(summary.problemCount) row(s) skipped") + "; wrote \(block) and \(identity)\n")
    }
}
