import BFV

extension MulPirServer {
    /// A server for the database of one shard file (`ShardFile`, either version), checked against `parameters`.
    /// Where the moduli fit the 32-bit scan layout, each plaintext is packed into the matrix as it is read
    /// (`ShardFile.matrices`), so a load holds the database once; otherwise it goes through `ProcessedDatabase`.
    public init(context: Context, parameters: MulPirParameters, shardFile bytes: [UInt8], threads: Int? = nil) throws {
        guard let matrices = try ShardFile.matrices(bytes, context: context, parameters: parameters) else {
            try self.init(context: context, database: try ProcessedDatabase(shardFile: bytes, parameters: parameters, context: context),
                          threads: threads)
            return
        }
        try self.init(context: context, parameters: parameters, threads: threads, tables: matrices.map { .narrow($0) })
    }
}
