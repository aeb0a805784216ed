import Foundation
import LookupEngine
import LookupProtocol

/// A ring kept in a key directory (`KeyDirectory`): one file per key, listed in `keys.json`.
extension RotatingKeyRing {
    /// One key as `keys.json` lists it. Directories written before the rings were one type are read too: an issuer
    /// ring's `tier`, a gateway ring's `keyID` and `created`.
    struct Record: Codable {
        var group: String
        var identifier: String?
        var file: String
        var notBefore: Double
        var notAfter: Double

        private enum CodingKeys: String, CodingKey { case group, identifier, file, notBefore, notAfter, tier, keyID, created }

        init(group: String, identifier: String, file: String, notBefore: Double, notAfter: Double) {
            (self.group, self.identifier, self.file, self.notBefore, self.notAfter) = (group, identifier, file, notBefore, notAfter)
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            group = try c.decodeIfPresent(String.self, forKey: .group) ?? c.decodeIfPresent(String.self, forKey: .tier) ?? ""
            if let identifier = try c.decodeIfPresent(String.self, forKey: .identifier) {
                self.identifier = identifier
            } else if let keyID = try c.decodeIfPresent(UInt8.self, forKey: .keyID) {
                identifier = [keyID].hexString
            }
            file = try c.decode(String.self, forKey: .file)
            guard let start = try c.decodeIfPresent(Double.self, forKey: .notBefore) ?? c.decodeIfPresent(Double.self, forKey: .created) else {
                throw DecodingError.keyNotFound(CodingKeys.notBefore, .init(codingPath: c.codingPath, debugDescription: "no start"))
            }
            notBefore = start
            notAfter = try c.decode(Double.self, forKey: .notAfter)
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(group, forKey: .group)
            try c.encodeIfPresent(identifier, forKey: .identifier)
            try c.encode(file, forKey: .file)
            try c.encode(notBefore, forKey: .notBefore)
            try c.encode(notAfter, forKey: .notAfter)
        }
    }

    /// The keys `directory` lists (none when it has no manifest yet).
    static func load(_ kind: Kind, from directory: String) throws -> [Entry] {
        let files = try KeyDirectory(path: directory, suffix: kind.fileSuffix)
        guard let records = try files.records(Record.self) else { return [] }
        return try records.map { record in
            var identifier: [UInt8]?
            if let hex = record.identifier {
                guard let bytes = [UInt8](hex: hex.utf8) else { throw ConfigError("\(directory)/keys.json has a key identifier that is not hex") }
                identifier = bytes
            }
            return Entry(group: record.group, key: try kind.key(identifier: identifier, secret: try files.read(record.file)),
                         notBefore: Date(timeIntervalSince1970: record.notBefore), notAfter: Date(timeIntervalSince1970: record.notAfter))
        }
    }

    /// Writes the key files not yet written, then the manifest (atomically), then deletes the files it no longer
    /// lists: a crash at any step leaves the previous manifest naming complete files.
    static func save(_ entries: [Entry], kind: Kind, in directory: String) throws {
        let files = try KeyDirectory(path: directory, suffix: kind.fileSuffix)
        var records: [Record] = []
        for entry in entries {
            let identifier = kind.identifier(of: entry.key)
            let group = entry.group.isEmpty ? "" : "\(entry.group)-"
            let file = "\(kind.ring)-\(group)\(identifier.prefix(8).hexString)-\(Int(entry.notBefore.timeIntervalSince1970))\(kind.fileSuffix)"
            try files.writeKey(file, kind.secret(of: entry.key))
            records.append(Record(group: entry.group, identifier: identifier.hexString, file: file,
                                  notBefore: entry.notBefore.timeIntervalSince1970, notAfter: entry.notAfter.timeIntervalSince1970))
        }
        try files.replaceManifest(records, files: Set(records.map(\.file)))
    }
}
