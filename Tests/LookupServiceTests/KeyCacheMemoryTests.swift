import Foundation
import ServiceTestSupport
import Testing

/// The parsed-key cache charges `EvaluationKey.memoryBytes` per key; this checks that charge against what 100 parsed
/// keys really cost, measured as RSS growth in a process of their own (`callveil key-memory`), where no other test's
/// allocations move the number.
@Suite("Key cache memory")
struct KeyCacheMemoryTests {
    @Test("The cache's charge for 100 parsed keys is within 20% of the RSS they take")
    func chargeMatchesRSS() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let binary = root.appendingPathComponent(".build/debug/callveil").path
        try #require(FileManager.default.isExecutableFile(atPath: binary), "\(binary) is built by `swift build` / `swift test`")
        // The child parses 100 keys in a debug build (many seconds): waited for off the test pool.
        let (data, status) = try await offPool { () throws -> (Data, Int32) in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["key-memory", "--count", "100"]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (data, process.terminationStatus)
        }
        #expect(status == 0)
        let report = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Int])
        let charged = try #require(report["charged"]), growth = try #require(report["rssGrowth"])
        print("100 parsed keys: charged \(charged) B, RSS grew \(growth) B")
        #expect(growth > 0)
        let ratio = Double(charged) / Double(growth)
        #expect(ratio > 0.8 && ratio < 1.2, "charged \(charged) B for an RSS growth of \(growth) B (\(ratio)×)")
    }
}
