import Foundation
import ServiceTestSupport
import Testing

/// What large request bodies take of the tuned service's malloc heap, which keeps what is freed until the process is
/// idle (and a busy one never is): measured in a process of its own (`callveil-bench upload-memory`), the service as
/// `serve` runs it.
@Suite("Request bodies and the heap")
struct UploadMemoryTests {
    @Test("An 8 MiB body is collected outside the heap and parsed in place: the heap's peak grows by less than a quarter of it")
    func largeBodyStaysOutOfTheHeap() async throws {
        let report = try await runBenchProbe(["upload-memory", "--phones", "8", "--body-kilobytes", "8192"])
        let body = try #require(report["bodyBytes"]), grown = try #require(report["bodyPeak"]) - (try #require(report["bodyBefore"]))
        let phones = try #require(report["phones"]), upload = try #require(report["uploadBytes"])
        let uploadsGrown = try #require(report["uploadPeak"]) - (try #require(report["uploadBefore"]))
        print("a malformed body of \(body >> 10) KiB: the heap's peak +\(grown >> 10) KiB; \(phones) key uploads of "
              + "\(upload >> 10) KiB at once: +\(uploadsGrown >> 10) KiB (\(Double(uploadsGrown) / Double(phones * upload)) uploads' size per phone)")
        // Before, the collected buffer and a copy for the parser were both in the heap: twice the body.
        #expect(grown < body / 4)
    }
}
