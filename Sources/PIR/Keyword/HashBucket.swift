/// One cuckoo bucket (SPEC-PIR §2.5): `count:u8`, then per entry the 8 keyword-hash bytes, a little-endian u16
/// value length and the value. Padding after the entries is ignored.
public struct HashBucket: Sendable, Equatable {
    /// One entry: the keyword hash and its value.
    public struct Entry: Sendable, Equatable {
        /// `LE64(SHA256(keyword)[0..8])`; its little-endian bytes are what the bucket stores.
        public var keywordHash: UInt64
        /// The value (at most 65535 bytes).
        public var value: [UInt8]

        /// Creates an entry.
        public init(keywordHash: UInt64, value: [UInt8]) {
            self.keywordHash = keywordHash
            self.value = value
        }

        /// Bytes this entry adds to a bucket: 8 + 2 + value.
        public var serializedSize: Int { 10 + value.count }
    }

    /// Most entries a bucket can hold (the count is one byte).
    public static let maxEntries = 255
    /// Largest value length (the length is a u16).
    public static let maxValueLength = 65535

    /// The entries in serialization order.
    public var entries: [Entry]

    /// Creates a bucket.
    public init(entries: [Entry] = []) { self.entries = entries }

    /// `1 + Σ (10 + len(value))`.
    public var serializedSize: Int { entries.reduce(1) { $0 + $1.serializedSize } }

    /// The bucket's bytes.
    public func serialize() -> [UInt8] {
        var out: [UInt8] = [UInt8(entries.count)]
        out.reserveCapacity(serializedSize)
        for e in entries {
            for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: e.keywordHash >> UInt64(8 * i))) }
            out.append(UInt8(truncatingIfNeeded: e.value.count))
            out.append(UInt8(truncatingIfNeeded: e.value.count >> 8))
            out.append(contentsOf: e.value)
        }
        return out
    }

    /// Parses a bucket from the start of `bytes` (trailing padding ignored); throws on truncation.
    public init(deserialize bytes: some Collection<UInt8>) throws {
        let b = Array(bytes)
        guard let count = b.first else { throw PIRError.malformedDatabase("empty bucket") }
        var pos = 1
        var entries: [Entry] = []
        for _ in 0..<Int(count) {
            guard pos + 10 <= b.count else { throw PIRError.malformedDatabase("bucket entry header truncated") }
            var hash: UInt64 = 0
            for i in 0..<8 { hash |= UInt64(b[pos + i]) << UInt64(8 * i) }
            let length = Int(b[pos + 8]) | Int(b[pos + 9]) << 8
            pos += 10
            guard pos + length <= b.count else { throw PIRError.malformedDatabase("bucket value truncated") }
            entries.append(Entry(keywordHash: hash, value: Array(b[pos..<(pos + length)])))
            pos += length
        }
        self.entries = entries
    }

    /// The value of the first entry whose hash matches, or nil.
    public func value(forKeywordHash hash: UInt64) -> [UInt8]? {
        entries.first { $0.keywordHash == hash }?.value
    }
}
