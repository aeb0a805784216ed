import ArgumentParser
import Dataset
import Foundation
import LookupProtocol

/// `callveil db`: tools over processed dataset versions.
struct DatabaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db", abstract: "Inspect processed dataset versions.",
        subcommands: [DatabaseDiffCommand.self, DatabaseVerifyCommand.self])
}

/// `callveil db diff OLD NEW`: what changed between two manifests.
struct DatabaseDiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff", abstract: "Print what changed between two dataset manifests (rows, config id, shards to move).")

    @Argument(help: "The older manifest.")
    var old: String

    @Argument(help: "The newer manifest.")
    var new: String

    func run() throws {
        let diff = ManifestDiff(from: try DatasetManifest.read(path: old), to: try DatasetManifest.read(path: new))
        print(diff.report, terminator: "")
    }
}

/// `callveil db verify MANIFEST`: checks every file the manifest names.
struct DatabaseVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Check that every file of a dataset version has its recorded size and SHA-256.")

    @Argument(help: "The manifest.")
    var manifest: String

    func run() throws {
        let version = try DatasetManifest.read(path: manifest)
        let directory = URL(fileURLWithPath: manifest).deletingLastPathComponent().path
        try version.verify(directory: directory)
        print("\(manifest): \(version.files.count) files, \(version.rows) rows, \(version.shards.count) shards: all match")
    }
}
