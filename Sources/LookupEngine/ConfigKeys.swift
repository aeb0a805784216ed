import Foundation

/// Keys of a configuration file that no setting has. A misspelt key (`adminport`, `keyz`) is an error naming its
/// path rather than a setting silently left at its default.
package enum ConfigKeys {
    /// The paths (`http.adminport`, `usecases[1].fileStm`) of the keys of `input`, a file parsed as JSON or YAML,
    /// that `decoded`, the value decoded from it, does not carry once encoded again: keys its types do not read.
    /// Keys whose value is null are left alone.
    package static func unknown(in input: Any, decoded: some Encodable) throws -> [String] {
        let known = try JSONSerialization.jsonObject(with: JSONEncoder().encode(decoded), options: [.fragmentsAllowed])
        return unknown(input, known, path: "")
    }

    /// The error for `unknown` keys in the file at `path`, nil when there are none.
    package static func error(_ unknown: [String], in path: String) -> ConfigError? {
        guard !unknown.isEmpty else { return nil }
        let list = unknown.prefix(10).joined(separator: ", ") + (unknown.count > 10 ? " and \(unknown.count - 10) more" : "")
        return ConfigError("\(path): unknown key\(unknown.count == 1 ? "" : "s") \(list) (check the spelling against docs/operations.md)")
    }

    private static func unknown(_ input: Any, _ known: Any, path: String) -> [String] {
        if let object = dictionary(input) {
            let knownObject = dictionary(known) ?? [:]
            return object.keys.sorted().flatMap { key -> [String] in
                let value = object[key]!
                if value is NSNull { return [] }
                let child = path.isEmpty ? key : "\(path).\(key)"
                guard let knownValue = knownObject[key] else { return [child] }
                return unknown(value, knownValue, path: child)
            }
        }
        if let array = input as? [Any], let knownArray = known as? [Any] {
            return zip(array, knownArray).enumerated().flatMap { unknown($1.0, $1.1, path: "\(path)[\($0)]") }
        }
        return []
    }

    /// A mapping with string keys: JSON objects, and YAML mappings (whose keys are `AnyHashable`).
    private static func dictionary(_ value: Any) -> [String: Any]? {
        if let object = value as? [String: Any] { return object }
        if let mapping = value as? [AnyHashable: Any] {
            return Dictionary(mapping.map { ("\($0.key.base)", $0.value) }, uniquingKeysWith: { a, _ in a })
        }
        return nil
    }
}
