import ClusterTransport
import Foundation
import LookupCoordinator
import LookupStorage
import ServiceTestSupport
import Testing
import ZeroMQ

/// The coordinator's spool as more than one writer meets it: concurrent writes of the same content, a prune while a
/// write is under way, leftovers of other processes, and a second coordinator given the same directory.
@Suite("Shard spool")
struct SpoolTests {
    /// Bytes of one shard's content for these tests.
    static let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }

    /// Their content hash.
    static let sha = TransferSource.digest(bytes)

    /// A fresh spool path under a new temporary directory, that directory (to remove), and where `bytes` spool in it.
    static func freshSpool() throws -> (spool: String, directory: String, path: String) {
        let directory = try temporaryDirectory()
        return ("\(directory)/spool", directory, TransferSource.spoolPath(sha256: sha, in: "\(directory)/spool"))
    }

    @Test("The same content spooled by several writers at once: every write succeeds and the file is whole")
    func concurrentWritesOfOneContent() async throws {
        let (spool, directory, path) = try Self.freshSpool()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sha = Self.sha
        for round in 0..<20 {
            try? FileManager.default.removeItem(atPath: path)
            let failures = await withTaskGroup(of: String?.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        do { _ = try TransferSource.spooled(Self.bytes, sha256: sha, in: spool); return nil } catch { return "\(error)" }
                    }
                }
                var failures: [String] = []
                for await failure in group { if let failure { failures.append(failure) } }
                return failures
            }
            #expect(failures.isEmpty, "round \(round): \(failures)")
            #expect(FileManager.default.contents(atPath: path) == Data(Self.bytes))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: spool) == [URL(fileURLWithPath: path).lastPathComponent])
    }

    @Test("A prune while content it keeps is being written leaves the write alone")
    func pruneDuringWrite() async throws {
        let (spool, directory, path) = try Self.freshSpool()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sha = Self.sha
        try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
        for round in 0..<20 {
            try? FileManager.default.removeItem(atPath: path)
            let pruning = Task.detached {
                for _ in 0..<200 { TransferSource.pruneSpool(spool, keeping: [sha]) }
            }
            var failures: [String] = []
            for _ in 0..<10 {
                try? FileManager.default.removeItem(atPath: path)
                do { _ = try TransferSource.spooled(Self.bytes, sha256: sha, in: spool) } catch { failures.append("\(error)") }
            }
            await pruning.value
            #expect(failures.isEmpty, "round \(round): \(failures)")
        }
    }

    @Test("A prune removes other processes' temporaries and the old fixed-name one, and keeps this process's of kept content")
    func pruneLeftovers() throws {
        let (spool, directory, _) = try Self.freshSpool()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let kept = Self.sha, gone = TransferSource.digest([1, 2, 3])
        let keptFile = URL(fileURLWithPath: TransferSource.spoolPath(sha256: kept, in: spool)).lastPathComponent
        let goneFile = URL(fileURLWithPath: TransferSource.spoolPath(sha256: gone, in: spool)).lastPathComponent
        let ours = "\(keptFile).\(getpid())-1f.partial"
        let names = [keptFile, goneFile, ours, "\(keptFile).\(getpid() &+ 1)-2e.partial", "\(keptFile).partial",
                     "\(goneFile).\(getpid())-3d.partial", ".lock", "notes.txt"]
        try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
        for name in names { FileManager.default.createFile(atPath: "\(spool)/\(name)", contents: Data([0])) }
        #expect(TransferSource.pruneSpool(spool, keeping: [kept]) == 4)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: spool)) == [keptFile, ours, ".lock", "notes.txt"])
    }

    @Test("One spool directory, one holder: a second lock or coordinator on it fails with the spool code, and it is free once released")
    func oneHolder() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = "\(directory)/spool"
        var first: DirectoryLock? = try DirectoryLock(directory: spool)
        #expect(first != nil)
        #expect { try DirectoryLock(directory: spool) } throws: { ($0 as? ClusterError)?.code == .spool }
        first = nil
        let store = try SQLiteEvaluationKeyStore(path: "\(directory)/keys.sqlite")
        let context = try ZMQContext()
        var options = ClusterCoordinator.Options(bind: "tcp://127.0.0.1:0")
        options.spoolDirectory = spool
        let coordinator = try ClusterCoordinator(context: context, options: options, keyStore: store, logger: TestServer.logger)
        #expect { try ClusterCoordinator(context: context, options: options, keyStore: store, logger: TestServer.logger) }
            throws: { ($0 as? ClusterError)?.code == .spool }
        coordinator.shutdown()
        let again = try ClusterCoordinator(context: context, options: options, keyStore: store, logger: TestServer.logger)
        again.shutdown()
    }
}
