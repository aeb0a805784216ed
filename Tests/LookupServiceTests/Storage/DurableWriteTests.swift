import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import LookupStorage
import ServiceTestSupport
import Testing

/// The durable write's system calls: every byte written and synced, and a directory sync that syncs a directory only.
@Suite("Durable write")
struct DurableWriteTests {
    @Test("A directory sync of a directory succeeds; of a file it fails with ENOTDIR, while a plain sync of the file succeeds")
    func directorySyncNeedsDirectory() throws {
        let directory = try temporaryDirectory()
        let file = "\(directory)/key"
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        #expect(fd >= 0)
        let bytes: [UInt8] = Array(repeating: 0x5A, count: 70_000)
        let code = bytes.withUnsafeBytes { DurableWrite.writeAllAndSync(fd, $0) }
        close(fd)
        #expect(code == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == Data(bytes), "every byte written")
        #expect(DurableWrite.sync(directory, directory: true) == 0)
        #expect(DurableWrite.sync(file, directory: true) == ENOTDIR)
        #expect(DurableWrite.sync(file) == 0)
        #expect(DurableWrite.sync("\(directory)/missing", directory: true) == ENOENT)
    }
}
