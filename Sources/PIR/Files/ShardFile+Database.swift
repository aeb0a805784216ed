import BFV

extension ShardFile {
    /// A processed database held only in evaluation form (the reference's `.bin`, a version-1 file) as a version-2
    /// shard file, so that one shard format travels between processes: each plaintext back in coefficient form,
    /// packed into its payload. Throws when a plaintext is not the packing of a payload (a coefficient wider than
    /// `bitsPerCoefficient`), since the file could not give it back.
    public static func serialize(_ database: ProcessedDatabase, parameterBlob: [UInt8], context: Context) throws -> [UInt8] {
        let parameters = database.parameters
        let bits = parameters.bitsPerCoefficient
        let payloads = try database.tables.map { table in
            try table.map { slot -> [UInt8]? in
                guard let slot else { return nil }
                let values = try context.plaintext(fromEval: slot).values
                let payload = Array(BytePacking.bytes(from: values, bitsPerCoefficient: bits).prefix(parameters.bytesPerPlaintext))
                guard DatabaseEncoding.values(of: payload, parameters: parameters) == values else {
                    throw PIRError.invalidDatabase("a plaintext is not the packing of a \(parameters.bytesPerPlaintext)-byte payload")
                }
                return payload
            }
        }
        return try serialize(payloads: payloads, parameters: parameters, parameterBlob: parameterBlob)
    }


    /// The sub-table and slot counts of a version-2 shard file, after checking its layout against `context` and its
    /// SHA-256, without decoding a plaintext; nil for a version-1 file.
    public static func versionTwoShape(_ bytes: [UInt8], context: Context) throws -> (tables: Int, slots: Int)? {
        let layout = try Layout(bytes, context: context)
        guard layout.version == 2 else { return nil }
        try layout.checkDigest(of: bytes)
        return (layout.tableCount, layout.slots)
    }
}
