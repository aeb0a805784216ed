import LookupProtocol
import BFV
import Foundation
import PIR

extension DatasetBuilder {
    /// The steps of a commit, in order, as `onCommitStep` sees them (tests stop or snapshot a commit at each).
    public enum CommitStep: Sendable, Equatable, CustomStringConvertible {
        /// Every file of the new version is written and synced in the staging folder; nothing moved yet.
        case staged
        /// One staged file was renamed into the output folder (under its content-addressed name).
        case moved(String)
        /// Every file is in place and the folder synced; the manifest is not yet replaced.
        case filesInPlace
        /// The new manifest is written and synced beside the old one, not yet renamed over it.
        case manifestStaged
        /// The manifest was renamed over the old one and the folder synced: the new version is the live one.
        case manifestReplaced
        /// Files no longer named by the new or the replaced manifest were deleted.
        case collected

        public var description: String {
            switch self {
            case .staged: return "staged"
            case .moved(let name): return "moved \(name)"
            case .filesInPlace: return "files in place"
            case .manifestStaged: return "manifest staged"
            case .manifestReplaced: return "manifest replaced"
            case .collected: return "collected"
            }
        }
    }

    /// Moves the staged files into the output folder and replaces the manifest, so that a crash or an error at any
    /// step leaves either the previous version or the new one whole, and the next run working:
    ///
    /// 1. every new file is already written and synced under a name derived from its SHA-256, so a rename never
    ///    replaces a file the live manifest names with other contents;
    /// 2. the files are renamed into the folder, and the folder is synced;
    /// 3. the manifest is written to a temporary file, synced, renamed over the old one, and the folder synced:
    ///    this rename is the commit;
    /// 4. files named by neither the new nor the replaced manifest (an older version's, or an interrupted run's)
    ///    are deleted. The replaced version's files stay, so a process still loading it finds them.
    func commit(_ built: [Built], bucketBytes: Int, maxValueLength: Int, staging: String, input: DatasetManifest.Input?,
                delta: DatasetManifest.Input?, previous: Previous?, overlay: DatasetOverlay?, context: Context) throws -> DatasetManifest {
        let engine = try options.processingOptions()
        let configuration: UseCaseConfiguration
        do {
            configuration = try UseCaseConfiguration(shardParameters: built.map(\.parameters))
        } catch {
            throw DatasetError.processing("the shards do not form a use case: \(error)")
        }
        let galois = Set(built.flatMap(\.shard.galoisElements))
        let union = EvaluationKeyConfig(galoisElements: galois.sorted(), hasRelinearizationKey: true)
        let keyConfigBytes = Array(EvaluationKeyConfigMessage(union, parameters: engine.encryption).textFormatString().utf8)
        let keyConfigDigest = FileDigest.of(bytes: keyConfigBytes)
        let keyConfigName = "\(stem).\(keyConfigDigest.sha256.prefix(16)).evaluation-key-config.txtpb"
        try Self.writeSynced(keyConfigBytes, to: "\(staging)/\(keyConfigName)")
        var overlayRecord: DatasetManifest.OverlayRecord?
        if let overlay {
            let bytes = try overlay.encoded()
            let digest = FileDigest.of(bytes: bytes)
            let name = "\(stem).\(digest.sha256.prefix(16)).overlay.json"
            try Self.writeSynced(bytes, to: "\(staging)/\(name)")
            overlayRecord = .init(file: Self.file(name, digest), list: overlay.list, version: overlay.version, entries: overlay.entries.count)
        }
        let manifestPath = "\(directory)/\(DatasetManifest.fileName(stem: stem))"
        let previousDigest = try previous.map { try FileDigest.of(path: "\($0.directory)/\(DatasetManifest.fileName(stem: $0.manifest.stem))").sha256 }
        var manifest = DatasetManifest(
            format: DatasetManifest.currentFormat, useCase: useCase ?? previous?.manifest.useCase, stem: stem,
            configID: configuration.configID.hexString, options: options, bucketBytes: bucketBytes, maxValueLength: maxValueLength,
            rows: built.reduce(0) { $0 + $1.shard.rows }, input: input, delta: delta, previousManifestSHA256: previousDigest,
            keyConfig: .init(path: keyConfigName, bytes: keyConfigDigest.bytes, sha256: keyConfigDigest.sha256),
            shards: built.map(\.shard))
        manifest.overlay = overlayRecord
        let replaced = try? DatasetManifest.read(path: manifestPath)
        try AtomicFile.sync(path: staging)
        try step(.staged)
        for file in manifest.files where FileManager.default.fileExists(atPath: "\(staging)/\(file.path)") {
            guard rename("\(staging)/\(file.path)", "\(directory)/\(file.path)") == 0 else {
                throw DatasetError.unreadable(path: "\(directory)/\(file.path)", why: "cannot move into place (errno \(errno))")
            }
            try step(.moved(file.path))
        }
        try AtomicFile.sync(path: directory)
        try step(.filesInPlace)
        try AtomicFile.write(try manifest.encoded(), to: manifestPath, beforeRename: { try step(.manifestStaged) })
        try AtomicFile.sync(path: directory)
        try step(.manifestReplaced)
        removeUnnamedFiles(keeping: Set((manifest.files + (replaced?.files ?? [])).map(\.path)))
        try step(.collected)
        return manifest
    }

    /// Calls the test hook.
    func step(_ step: CommitStep) throws {
        try onCommitStep?(step)
    }

    /// Deletes this stem's dataset files that `keeping` does not name (shard, parameter, row, key-config and
    /// overlay files of older versions or of runs that stopped before their commit), leftover temporary manifests,
    /// and the staging folders of processes that no longer run. Another stem's files are never touched.
    func removeUnnamedFiles(keeping: Set<String>) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names where !keeping.contains(name) && isDatasetFile(name) {
            try? FileManager.default.removeItem(atPath: "\(directory)/\(name)")
        }
        let stagingPrefix = ".\(stem).staging-"
        for name in names where name.hasPrefix(stagingPrefix) {
            guard let pid = Int32(name.dropFirst(stagingPrefix.count)), Self.isGone(pid) else { continue }
            try? FileManager.default.removeItem(atPath: "\(directory)/\(name)")
        }
    }

    /// Whether `name` is one of this stem's dataset files: `<stem>-<i>[.<hash>].<kind>`,
    /// `<stem>[.<hash>].evaluation-key-config.txtpb`, `<stem>.<hash>.overlay.json`, or a temporary manifest of a
    /// process that no longer runs.
    func isDatasetFile(_ name: String) -> Bool {
        let manifestTemporary = "\(DatasetManifest.fileName(stem: stem)).tmp-"
        if name.hasPrefix(manifestTemporary) {
            return Int32(name.dropFirst(manifestTemporary.count)).map(Self.isGone) ?? false
        }
        if name.hasPrefix("\(stem).") {
            let rest = name.dropFirst(stem.count + 1)
            for kind in ["evaluation-key-config.txtpb", "overlay.json"] where rest == kind || (rest.hasSuffix(".\(kind)")
                && Self.isHashTag(rest.dropLast(kind.count + 1))) {
                return true
            }
            return false
        }
        guard name.hasPrefix("\(stem)-") else { return false }
        let parts = name.dropFirst(stem.count + 1).split(separator: ".", maxSplits: 1)
        guard parts.count == 2, Int(parts[0]) != nil else { return false }
        var kind = parts[1]
        if let dot = kind.firstIndex(of: "."), Self.isHashTag(kind[..<dot]) { kind = kind[kind.index(after: dot)...] }
        return ["cvshard", "params.txtpb", "params.binpb", "rows", "bin"].contains(String(kind))
    }

    /// Whether process `pid` (the writer of a staging folder or a temporary manifest) no longer runs.
    static func isGone(_ pid: Int32) -> Bool {
        pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH
    }

    /// Whether `text` is the 16 hex digits of a content-addressed name.
    static func isHashTag(_ text: Substring) -> Bool {
        text.count == 16 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// A content-addressed file name of shard `index`: `<stem>-<index>.<first 16 hex digits of SHA-256>.<kind>`.
    func shardFileName(_ index: Int, _ kind: String, sha256: String) -> String {
        "\(stem)-\(index).\(sha256.prefix(16)).\(kind)"
    }
}
