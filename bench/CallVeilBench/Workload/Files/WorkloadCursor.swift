import Foundation

/// `cursor`: the first prepared call no replay has used yet (each call's tokens are single-use).
enum WorkloadCursor {
    static func path(_ directory: String) -> String { "\(directory)/cursor" }

    static func load(_ directory: String) -> Int {
        (try? String(contentsOfFile: path(directory), encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
    }

    static func save(_ value: Int, to directory: String) throws {
        try "\(value)\n".write(toFile: path(directory), atomically: true, encoding: .utf8)
    }
}
