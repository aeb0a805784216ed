import Dataset
import LookupClient
import LookupProtocol

extension LookupDevice {
    /// Looks each record's number up in the block use case; the numbers whose decrypted answer is not the record's
    /// block value (empty when every answer is right).
    public func wrongBlockAnswers(_ records: some Sequence<IdentityRecord>) async throws -> [String] {
        var wrong: [String] = []
        for record in records where try await lookup(Array(record.number.utf8), in: DemoDataset.block) != record.blockValue {
            wrong.append(record.number)
        }
        return wrong
    }
}
