#if os(Linux)
import CKernels
import Foundation
import PIR
import Testing

/// A long-running role keeps every page of code and read-only data it touched while starting and loading (the
/// loader's relocation tables, argument and config parsing, the shard build) unless it gives them back. The first
/// idle release does, once; data mappings such as a mapped scan file must keep their pages. Each test runs in a
/// child process of its own (an exit test): the release is process-wide and once per process.
@Suite("Start-up page release")
struct StartupPagesTests {
    /// One mapping of `/proc/self/smaps`: its range, permissions, path, resident KiB and transparent huge pages.
    struct Mapping {
        var start: UInt
        var end: UInt
        var permissions: String
        var path: String
        var residentKiB = 0
        var anonHugePagesKiB = 0
    }

    /// This process's mappings, read to the end: procfs reports no size, and a sized read stops after one page.
    static func mappings() -> [Mapping] {
        let text = String(decoding: FileHandle(forReadingAtPath: "/proc/self/smaps")?.readDataToEndOfFile() ?? Data(),
                          as: UTF8.self)
        var result: [Mapping] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let range = fields.first, !range.hasSuffix(":"), let dash = range.firstIndex(of: "-"),
               let start = UInt(range[..<dash], radix: 16), let end = UInt(range[range.index(after: dash)...], radix: 16),
               fields.count >= 5 {
                result.append(Mapping(start: start, end: end, permissions: String(fields[1]),
                                      path: fields.count > 5 ? fields[5...].joined(separator: " ") : ""))
            } else if line.hasPrefix("Rss:"), !result.isEmpty {
                result[result.count - 1].residentKiB = Int(fields.dropFirst().first ?? "") ?? 0
            } else if line.hasPrefix("AnonHugePages:"), !result.isEmpty {
                result[result.count - 1].anonHugePagesKiB = Int(fields.dropFirst().first ?? "") ?? 0
            }
        }
        return result
    }

    /// The read-only mappings of `path`.
    static func readOnlyMappings(of path: String) -> [Mapping] {
        mappings().filter { $0.path == path && !$0.permissions.contains("w") }
    }

    /// Resident KiB of the read-only mappings of `path`.
    static func readOnlyResidentKiB(_ path: String) -> Int { readOnlyMappings(of: path).reduce(0) { $0 + $1.residentKiB } }

    /// A private copy of a library this process links (libzmq), loaded: its pages are this process's alone, as a
    /// deployed binary's are, where the test binary's own pages are shared with the parent test process. Every page
    /// of its read-only segments is touched, as a start touches the code it runs. Returns the copy's path.
    static func loadPrivateLibrary() -> String? {
        guard let original = mappings().first(where: { ($0.path as NSString).lastPathComponent.hasPrefix("libzmq.so") })?.path
        else { return nil }
        let copy = NSTemporaryDirectory() + "callveil-startup-pages-\(getpid()).so"
        guard (try? FileManager.default.copyItem(atPath: original, toPath: copy)) != nil,
              dlopen(copy, RTLD_NOW | RTLD_LOCAL) != nil else { return nil }
        for segment in readOnlyMappings(of: copy) {
            guard let base = UnsafeRawPointer(bitPattern: segment.start) else { continue }
            var sum: UInt8 = 0
            for offset in stride(from: 0, to: Int(segment.end - segment.start), by: 4096) {
                sum &+= base.load(fromByteOffset: offset, as: UInt8.self)
            }
            _ = sum
        }
        return copy
    }

    @Test("The first idle release gives back start-up pages once, and a mapped data file keeps its pages")
    func releasedOnceAtFirstIdle() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            guard let library = StartupPagesTests.loadPrivateLibrary() else { exit(2) }
            defer { unlink(library) }
            // A data file mapped read-only, as a scan file is, and touched: its pages must stay resident.
            let path = NSTemporaryDirectory() + "callveil-startup-data-\(getpid())"
            let size = 4 << 20
            FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x5a, count: size))
            defer { unlink(path) }
            let fd = open(path, O_RDONLY)
            guard fd >= 0, let map = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), map != MAP_FAILED else { exit(2) }
            var sum = 0
            for offset in stride(from: 0, to: size, by: 4096) { sum &+= Int(map.load(fromByteOffset: offset, as: UInt8.self)) }
            let dataBefore = StartupPagesTests.readOnlyResidentKiB(path)
            let libraryBefore = StartupPagesTests.readOnlyResidentKiB(library)

            MulPirServer.tuneAllocator()
            MulPirServer.setIdleRelease(milliseconds: 100)
            MulPirServer.noteAllocatorActivity()
            try? await Task.sleep(for: .milliseconds(1500))
            let first = MulPirServer.startupReleases
            let libraryAfter = StartupPagesTests.readOnlyResidentKiB(library)
            let dataAfter = StartupPagesTests.readOnlyResidentKiB(path)
            // A second quiet time releases the heap again but not the start-up pages.
            MulPirServer.noteAllocatorActivity()
            try? await Task.sleep(for: .milliseconds(1500))
            let second = MulPirServer.startupReleases
            let idle = MulPirServer.idleReleases
            print("library's read-only pages: \(libraryBefore) KiB resident, \(libraryAfter) KiB after the first idle "
                  + "release; mapped data file \(dataBefore) → \(dataAfter) KiB; start-up releases \(first), then "
                  + "\(second) after \(idle) idle releases (checksum \(sum))")
            munmap(map, size)
            close(fd)
            exit(first == 1 && second == 1 && idle >= 2 && libraryBefore >= 256 && libraryAfter * 4 <= libraryBefore
                 && dataBefore >= 4000 && dataAfter == dataBefore ? 0 : 1)
        }
        print(String(decoding: result?.standardOutputContent ?? [], as: UTF8.self))
    }

    @Test("The program keeps running the code it gave back")
    func codeFaultsBackIn() async {
        await #expect(processExitsWith: .success) {
            let advised = cv_release_startup_pages()
            // Code and tables touched again after the release come back from the file: string formatting and
            // parsing, from the Swift runtime and the standard library's pages.
            let text = (0..<1000).map { "\($0)" }.joined(separator: ",")
            let parsed = text.split(separator: ",").compactMap { Int($0) }
            print("advised \(advised >> 10) KiB; parsed \(parsed.count) numbers afterwards")
            exit(advised > 0 && parsed == Array(0..<1000) && cv_startup_releases() == 1 ? 0 : 1)
        }
    }
}
#endif
