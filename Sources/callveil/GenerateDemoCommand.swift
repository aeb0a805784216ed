import ArgumentParser
import Foundation
import PIR

/// `callveil generate-demo`: a reproducible demo dataset (CSV identities) and a few numbers worth querying.
struct GenerateDemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate-demo",
        abstract: "Generate a demo identity dataset (CSV) with blocked numbers and named callers.")

    @Option(help: "Numbers to generate.")
    var count: Int = 3000

    @Option(help: "Output CSV file.")
    var output: String

    @Option(help: "Random seed.")
    var seed: UInt64 = 2024

    func run() throws {
        guard count >= 3, count <= 10_000_000 else { throw ValidationError("count must be in 3...10000000") }
        var rng = SplitMix64(seed: seed)  // reproducible across platforms
        func next() -> UInt64 { rng.next() }
        let firstNames = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia", "Tim"]
        let businesses = ["Pizza", "Dental", "Pharmacy", "Bank", "Airline", "Taxi", "Library", "Clinic"]
        var seen = Set<String>()
        var lines = ["number,name,category,block,cache_minutes"]
        var samples: [String] = []
        var i = 0
        while seen.count < count {
            let number = "+1\(2 + next() % 8)\(next() % 100 / 10)\(next() % 10)\(2 + next() % 8)\(next() % 100 / 10)\(next() % 10)"
                + String(format: "%04d", next() % 10000)
            guard seen.insert(number).inserted else { continue }
            let blocked = i % 7 == 0
            let named = i % 3 != 2
            let business = i % 2 == 1
            let name = !named ? "" : business ? "\(businesses[Int(next() % 8)]) \(i)" : "\(firstNames[Int(next() % 10)]) \(i)"
            let category = !named ? "" : business ? "BUSINESS" : "PERSON"
            lines.append("\(number),\(name),\(category),\(blocked ? 1 : 0),\(named ? 5 + i % 55 : 0)")
            if i < 3 { samples.append(number) }
            i += 1
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: output, atomically: true, encoding: .utf8)
        let absent = "+15550000000"
        let samplePath = URL(fileURLWithPath: output).deletingLastPathComponent().appendingPathComponent("sample-numbers.txt").path
        try ((samples + [absent]).joined(separator: "\n") + "\n").write(toFile: samplePath, atomically: true, encoding: .utf8)
        writeStderr("wrote \(count) identities to \(output); sample numbers (blocked+named, named, unnamed, absent) in \(samplePath)\n")
    }
}
