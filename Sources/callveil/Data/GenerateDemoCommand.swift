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

    @Flag(help: "Add Apple's onboarding test identity, +14085551212 \"Johnny Appleseed\" (not blocked), which Apple's validation and `callveil doctor` look up.")
    var withTestIdentity = false

    func run() throws {
        guard count >= 3, count <= 100_000_000 else { throw ValidationError("count must be in 3...100000000") }
        var rng = SplitMix64(seed: seed)  // reproducible across platforms
        func next() -> UInt64 { rng.next() }
        let firstNames = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia", "Tim"]
        let businesses = ["Pizza", "Dental", "Pharmacy", "Bank", "Airline", "Taxi", "Library", "Clinic"]
        // Numbers are remembered as integers and lines written a megabyte at a time, so 100 million fit in memory.
        var seen = Set<UInt64>(minimumCapacity: count)
        guard FileManager.default.createFile(atPath: output, contents: nil), let file = FileHandle(forWritingAtPath: output) else {
            throw ValidationError("cannot write \(output)")
        }
        defer { try? file.close() }
        var text = "number,name,category,block,cache_minutes\n"
        if withTestIdentity {
            seen.insert(4_085_551_212)
            text += "+14085551212,Johnny Appleseed,PERSON,0,5\n"
        }
        var samples: [String] = []
        var i = 0
        while seen.count < count + (withTestIdentity ? 1 : 0) {
            let digits = [2 + next() % 8, next() % 100 / 10, next() % 10, 2 + next() % 8, next() % 100 / 10, next() % 10]
            let subscriber = next() % 10000
            let value = digits.reduce(0) { $0 * 10 + $1 } * 10000 + subscriber
            guard seen.insert(value).inserted else { continue }
            let number = "+1" + digits.map(String.init).joined() + String(format: "%04d", subscriber)
            let blocked = i % 7 == 0
            let named = i % 3 != 2
            let business = i % 2 == 1
            let name = !named ? "" : business ? "\(businesses[Int(next() % 8)]) \(i)" : "\(firstNames[Int(next() % 10)]) \(i)"
            let category = !named ? "" : business ? "BUSINESS" : "PERSON"
            text += "\(number),\(name),\(category),\(blocked ? 1 : 0),\(named ? 5 + i % 55 : 0)\n"
            if text.utf8.count >= 1 << 20 {
                try file.write(contentsOf: Data(text.utf8))
                text = ""
            }
            if i < 3 { samples.append(number) }
            i += 1
        }
        try file.write(contentsOf: Data(text.utf8))
        let absent = "+15550000000"
        let samplePath = URL(fileURLWithPath: output).deletingLastPathComponent().appendingPathComponent("sample-numbers.txt").path
        try ((samples + [absent]).joined(separator: "\n") + "\n").write(toFile: samplePath, atomically: true, encoding: .utf8)
        writeStderr("wrote \(count) identities to \(output); sample numbers (blocked+named, named, unnamed, absent) in \(samplePath)\n")
    }
}
