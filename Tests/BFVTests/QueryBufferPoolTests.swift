#if os(Linux)
import CKernels
import Foundation
import Testing

/// The queries' selector memory outside the malloc heap: on huge pages where the kernel allows, a finished query's
/// mapping serves the next query that fits in it while others are in use, the kept and in-use mappings together never
/// outnumber the most in use at once, and once none is in use none stays. Each test runs in a child process of its
/// own (an exit test): the pool is process-wide.
@Suite("Query buffer pool")
struct QueryBufferPoolTests {
    /// A mapping and the length the pool gave it.
    static func take(_ bytes: Int) -> (pointer: UnsafeMutableRawPointer, length: Int) {
        var length = 0
        let p = cv_query_buffer_alloc(bytes, &length)!
        memset(p, 0x5a, bytes)
        return (p, length)
    }

    /// Huge pages (`AnonHugePages`, KiB) of the mapping that holds `p`, from `/proc/self/smaps`.
    static func hugeKiB(at p: UnsafeMutableRawPointer) -> Int {
        let address = UInt(bitPattern: p)
        // Read line by line (getline): smaps is generated as it is read and reports no size.
        guard let file = fopen("/proc/self/smaps", "r") else { return -1 }
        defer { fclose(file) }
        var lines: [String] = []
        var buffer: UnsafeMutablePointer<CChar>? = nil
        var capacity = 0
        while getline(&buffer, &capacity, file) > 0, let buffer { lines.append(String(cString: buffer)) }
        free(buffer)
        var inside = false
        for line in lines {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\n" })
            if let range = fields.first, range.contains("-"), !range.hasSuffix(":") {
                let bounds = range.split(separator: "-").compactMap { UInt($0, radix: 16) }
                inside = bounds.count == 2 && bounds[0] <= address && address < bounds[1]
            } else if inside, fields.first == "AnonHugePages:", fields.count > 1 {
                return Int(fields[1]) ?? -1
            }
        }
        return -1
    }

    /// Whether the kernel gives transparent huge pages to a mapping that asks for them.
    static var hugePagesOffered: Bool {
        let mode = (try? String(contentsOfFile: "/sys/kernel/mm/transparent_hugepage/enabled", encoding: .utf8)) ?? ""
        return mode.contains("[always]") || mode.contains("[madvise]")
    }

    @Test("One query at a time keeps nothing once it ends, and its mapping is on huge pages where the kernel allows")
    func sequential() async {
        await #expect(processExitsWith: .success) {
            let small = (8 << 20) + 100
            let a = QueryBufferPoolTests.take(small)
            let huge = QueryBufferPoolTests.hugeKiB(at: a.pointer)
            cv_query_buffer_free(a.pointer, a.length)
            let keptAfterOne = cv_query_buffer_pooled_bytes()
            let b = QueryBufferPoolTests.take(small)  // a new mapping, the first one gone
            cv_query_buffer_free(b.pointer, b.length)
            let keptAfterTwo = cv_query_buffer_pooled_bytes()
            let offered = QueryBufferPoolTests.hugePagesOffered
            print("\(huge) KiB of huge pages in an 8 MiB mapping (huge pages offered: \(offered)); "
                  + "\(keptAfterOne) B and \(keptAfterTwo) B kept after each query ended")
            // At least one whole 2 MiB page of the four the mapping spans from its huge-page boundary.
            // 2, 3: a mapping kept; 4: smaps unreadable; 5: no huge page though the kernel offers them.
            exit(keptAfterOne != 0 ? 2 : keptAfterTwo != 0 ? 3 : offered && huge < 0 ? 4 : offered && huge < 2048 ? 5 : 0)
        }
    }

    @Test("Three at once keep what they return while any is in use; the last one back leaves none")
    func concurrent() async {
        await #expect(processExitsWith: .success) {
            let size = (4 << 20) + 4096
            let three = (0..<3).map { _ in QueryBufferPoolTests.take(size) }
            cv_query_buffer_free(three[0].pointer, three[0].length)
            cv_query_buffer_free(three[1].pointer, three[1].length)
            let keptWhileOneOut = cv_query_buffer_pooled_bytes()
            // A fourth query while one is out takes a kept mapping rather than a new one.
            let fourth = QueryBufferPoolTests.take(size)
            let reused = fourth.pointer == three[0].pointer || fourth.pointer == three[1].pointer
            cv_query_buffer_free(fourth.pointer, fourth.length)
            cv_query_buffer_free(three[2].pointer, three[2].length)
            let keptAfterLast = cv_query_buffer_pooled_bytes()
            cv_query_buffer_drain()
            let drained = cv_query_buffer_pooled_bytes()
            print("kept \(keptWhileOneOut) B with one of three still out (fourth reused one: \(reused)), "
                  + "\(keptAfterLast) B once none was out, \(drained) B after the drain")
            exit(keptWhileOneOut == 2 * three[0].length && reused && keptAfterLast == 0 && drained == 0
                 ? 0 : 1)
        }
    }
}
#endif
