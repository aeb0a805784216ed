import Foundation

extension Encodable {
    /// Writes this as the replay's results JSON (sorted keys, indented; a NaN or infinite figure as a string), atomically.
    func writeResultsJSON(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        try encoder.encode(self).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
