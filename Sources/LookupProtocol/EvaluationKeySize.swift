import BFV

extension EvaluationKeyConfig {
    /// Bytes of the serialized evaluation key (protobuf, seeded as devices send it) a device uploads for this
    /// configuration: what the key-compression strategy trades against server time. Measured by serializing a
    /// key made with a throwaway secret key, so it is exact for the parameters.
    public func serializedKeyBytes(context: Context) throws -> Int {
        let key = try EvaluationKey(config: self, secretKey: SecretKey(context: context))
        return try ProtoEvaluationKey(key.serialize()).serializedData().count
    }
}
