import Foundation
import LookupProtocol

/// Locates and loads the reference implementation's conformance vectors, which tests read in place from
/// `$CALLVEIL_CONFORMANCE` or `../shared/conformance` (never copied into the repository).
public enum Conformance {
    /// The conformance folder, if present.
    public static let root: URL? = {
        let fm = FileManager.default
        if let env = ProcessInfo.processInfo.environment["CALLVEIL_CONFORMANCE"], !env.isEmpty {
            return fm.fileExists(atPath: env) ? URL(fileURLWithPath: env) : nil
        }
        // This file is Tests/ConformanceSupport/Conformance.swift; the package root is two folders up.
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let candidate = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/conformance")
        return fm.fileExists(atPath: candidate.path) ? candidate : nil
    }()

    /// Whether the vectors can be read.
    public static var available: Bool { root != nil }

    /// Whether this run is our CI (`CI=true`), where missing vectors are a failure, not a skip.
    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// The message shown when the vectors are skipped.
    public static let skipMessage = "conformance vectors not found at $CALLVEIL_CONFORMANCE or ../shared/conformance: skipping"

    /// File names of the HE vectors (`he/he-*.json`), sorted; empty when the folder is missing.
    public static var heVectorNames: [String] {
        guard let root else { return [] }
        let dir = root.appendingPathComponent("he")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { $0.hasPrefix("he-") && $0.hasSuffix(".json") }.sorted()
    }

    /// Loads an HE vector file by name.
    public static func heVector(_ name: String) throws -> Vector {
        guard let root else { throw VectorError.missing(name) }
        let data = try Data(contentsOf: root.appendingPathComponent("he").appendingPathComponent(name))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw VectorError.malformed(name)
        }
        return Vector(name: name, object: object)
    }
}

/// Errors reading vector files.
public enum VectorError: Error {
    case missing(String)
    case malformed(String)
}

/// A JSON object from a vector file with typed accessors that throw on a missing or mistyped key.
public struct Vector: @unchecked Sendable {
    /// File name, for messages.
    public let name: String
    /// The decoded JSON object.
    public let object: [String: Any]

    /// Wraps a decoded object.
    public init(name: String, object: [String: Any]) {
        self.name = name
        self.object = object
    }

    /// A nested object.
    public func sub(_ key: String) throws -> Vector {
        guard let v = object[key] as? [String: Any] else { throw VectorError.malformed("\(name).\(key)") }
        return Vector(name: "\(name).\(key)", object: v)
    }

    /// A list of nested objects.
    public func subs(_ key: String) throws -> [Vector] {
        guard let v = object[key] as? [[String: Any]] else { throw VectorError.malformed("\(name).\(key)") }
        return v.enumerated().map { Vector(name: "\(name).\(key)[\($0.offset)]", object: $0.element) }
    }

    /// Whether the key is present.
    public func has(_ key: String) -> Bool { object[key] != nil }

    /// An integer.
    public func int(_ key: String) throws -> Int {
        guard let v = object[key] as? NSNumber else { throw VectorError.malformed("\(name).\(key)") }
        return v.intValue
    }

    /// An unsigned 64-bit integer.
    public func uint64(_ key: String) throws -> UInt64 {
        guard let v = object[key] as? NSNumber else { throw VectorError.malformed("\(name).\(key)") }
        return v.uint64Value
    }

    /// A double.
    public func double(_ key: String) throws -> Double {
        guard let v = object[key] as? NSNumber else { throw VectorError.malformed("\(name).\(key)") }
        return v.doubleValue
    }

    /// A string.
    public func string(_ key: String) throws -> String {
        guard let v = object[key] as? String else { throw VectorError.malformed("\(name).\(key)") }
        return v
    }

    /// Bytes from a hex string.
    public func hex(_ key: String) throws -> [UInt8] {
        let s = try string(key)
        guard let bytes = hexDecode(s) else { throw VectorError.malformed("\(name).\(key) is not hex") }
        return bytes
    }

    /// A list of unsigned integers.
    public func uints(_ key: String) throws -> [UInt64] {
        guard let v = object[key] as? [NSNumber] else { throw VectorError.malformed("\(name).\(key)") }
        return v.map(\.uint64Value)
    }

    /// A list of rows of unsigned integers.
    public func rows(_ key: String) throws -> [[UInt64]] {
        guard let v = object[key] as? [[NSNumber]] else { throw VectorError.malformed("\(name).\(key)") }
        return v.map { $0.map(\.uint64Value) }
    }
}

/// Decodes a hex string; nil if it is not hex.
public func hexDecode(_ s: String) -> [UInt8]? {
    [UInt8](hex: s.utf8)
}

extension Conformance {
    /// Names of the keyword-PIR cases (`pir/<case>/`), sorted; empty when the folder is missing.
    public static var pirCaseNames: [String] {
        guard let root else { return [] }
        let dir = root.appendingPathComponent("pir")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { FileManager.default.fileExists(atPath: dir.appendingPathComponent($0).appendingPathComponent("manifest.json").path) }.sorted()
    }

    /// A file of a PIR case.
    public static func pirFile(_ caseName: String, _ file: String) throws -> [UInt8] {
        guard let root else { throw VectorError.missing(file) }
        return [UInt8](try Data(contentsOf: root.appendingPathComponent("pir").appendingPathComponent(caseName).appendingPathComponent(file)))
    }

    /// A text file of a PIR case.
    public static func pirText(_ caseName: String, _ file: String) throws -> String {
        String(decoding: try pirFile(caseName, file), as: UTF8.self)
    }

    /// The manifest of a PIR case.
    public static func pirManifest(_ caseName: String) throws -> Vector {
        guard let object = try JSONSerialization.jsonObject(with: Data(try pirFile(caseName, "manifest.json"))) as? [String: Any] else {
            throw VectorError.malformed("\(caseName)/manifest.json")
        }
        return Vector(name: "\(caseName)/manifest.json", object: object)
    }

    /// Rows of a CSV file without its header, split on commas.
    public static func pirCSV(_ caseName: String, _ file: String) throws -> [[String]] {
        try pirText(caseName, file).split(separator: "\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
    }
}

extension Vector {
    /// A list of strings.
    public func strings(_ key: String) throws -> [String] {
        guard let v = object[key] as? [String] else { throw VectorError.malformed("\(name).\(key)") }
        return v
    }

    /// Whether the value at `key` is JSON null.
    public func isNull(_ key: String) -> Bool { object[key] is NSNull }
}
