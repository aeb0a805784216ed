/// Errors of the keyword-PIR layer: bad parameters, malformed queries, databases or buckets.
public enum PIRError: Error, Equatable, Sendable, CustomStringConvertible {
    /// PIR parameters that cannot work (dimensions, sizes, counts).
    case invalidParameters(String)
    /// A query that does not fit the shard's parameters (ciphertext count, batch size, moduli).
    case invalidQuery(String)
    /// A shard index outside `0..<shardCount`.
    case shardIndexOutOfRange(index: Int, shardCount: Int)
    /// A processed database file or bucket that cannot be parsed.
    case malformedDatabase(String)
    /// The evaluation key lacks what the computation needs.
    case missingEvaluationKey(String)
    /// Input rows that cannot be processed (duplicates, oversized values, placement failure).
    case invalidDatabase(String)

    public var description: String {
        switch self {
        case .invalidParameters(let why): return "invalid PIR parameters: \(why)"
        case .invalidQuery(let why): return "invalid PIR query: \(why)"
        case let .shardIndexOutOfRange(index, count): return "shard index \(index) is not below the shard count \(count)"
        case .malformedDatabase(let why): return "malformed processed database: \(why)"
        case .missingEvaluationKey(let why): return "evaluation key incomplete: \(why)"
        case .invalidDatabase(let why): return "invalid keyword database: \(why)"
        }
    }
}
