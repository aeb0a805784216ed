import ArgumentParser
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
        Output: <output>/block.binpb and <output>/identity.binpb (pir.v1.KeywordDatabase).
        Malformed and duplicate rows are listed; the command fails unless --skip-invalid is given.
        """)

    @Option(help: "Identities file (.txtpb or .csv).")
    var input: String

    @Option(help: "Output directory.")
    var output: String

    @Option(help: "Folder of <number>.heic icons.")
    var icons: String?

    @Flag(help: "Skip malformed and duplicate rows (each is still reported) instead of failing.")
    var skipInvalid = false

    func run() throws {
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
}
