import Foundation

/// A prepared phone: its User-Identifier, which of the distinct keys it holds, and the token for its `/key` upload.
struct WorkloadPhone {
    var userIdentifier: String
    var keyIndex: Int
    var uploadToken: String

    static func path(_ directory: String) -> String { "\(directory)/phones.bin" }

    static func save(_ phones: [WorkloadPhone], to directory: String) throws {
        var writer = RecordWriter()
        for phone in phones {
            writer.string(phone.userIdentifier)
            writer.u32(UInt32(phone.keyIndex))
            writer.string(phone.uploadToken)
        }
        try writer.write(to: path(directory))
    }

    static func load(_ directory: String) throws -> [WorkloadPhone] {
        var reader = try RecordReader(path: path(directory))
        var phones: [WorkloadPhone] = []
        while !reader.atEnd {
            phones.append(WorkloadPhone(userIdentifier: try reader.string(), keyIndex: Int(try reader.u32()), uploadToken: try reader.string()))
        }
        return phones
    }
}
