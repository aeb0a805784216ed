import Foundation

/// The seed-corpus side of a harness: run with `CALLVEIL_FUZZ_SEEDS=<dir>`, a harness writes its seeds there
/// (recorded exchanges with the fixture, valid files and frames) and exits instead of fuzzing.
public enum Seeds {
    /// The directory to write seeds to, when asked.
    public static var requestedDirectory: String? { ProcessInfo.processInfo.environment["CALLVEIL_FUZZ_SEEDS"] }

    /// Writes `seeds` (name → bytes) under the requested directory and exits, when seeds were asked for.
    public static func writeIfRequested(_ make: () throws -> [String: [UInt8]]) {
        guard let directory = requestedDirectory else { return }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let seeds = try make()
            for (name, bytes) in seeds.sorted(by: { $0.key < $1.key }) {
                try Data(bytes).write(to: URL(fileURLWithPath: "\(directory)/\(name)"))
            }
            print("wrote \(seeds.count) seeds to \(directory)")
            exit(0)
        } catch {
            print("seed recording failed: \(error)")
            exit(1)
        }
    }
}
