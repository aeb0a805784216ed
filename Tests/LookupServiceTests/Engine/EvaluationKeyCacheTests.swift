import BFV
import ConformanceSupport
import LookupEngine
import Testing

/// The parsed-key cache's order of use, byte budget and invalidation, checked directly and against a plain model
/// under random operations.
@Suite("Evaluation key cache")
struct EvaluationKeyCacheTests {
    /// A parsed key's stand-in: the cache never looks inside the value.
    static let value = EvaluationKey(galoisKeys: [:], relinearizationKey: nil)

    static func key(_ user: String, config: UInt8 = 1, timestamp: UInt64 = 1) -> EvaluationKeyCache.Key {
        EvaluationKeyCache.key(user: user, identifier: [config], timestamp: timestamp)
    }

    @Test("The least recently used key goes first; a get or a put makes a key the most recent")
    func leastRecentlyUsedFirst() {
        let cache = EvaluationKeyCache(capacity: 30)
        for user in ["a", "b", "c"] { cache.put(Self.key(user), Self.value, bytes: 10) }
        #expect(cache.keysByRecency == [Self.key("c"), Self.key("b"), Self.key("a")])
        #expect(cache.get(Self.key("a")) != nil)
        cache.put(Self.key("d"), Self.value, bytes: 10)
        #expect(cache.keysByRecency == [Self.key("d"), Self.key("a"), Self.key("c")], "b was the least recently used")
        #expect(cache.get(Self.key("b")) == nil)
        // A key put again replaces its entry and its charge, and becomes the most recent.
        cache.put(Self.key("c"), Self.value, bytes: 5)
        #expect(cache.keysByRecency == [Self.key("c"), Self.key("d"), Self.key("a")])
        #expect(cache.bytes == 25)
        // One put can evict several keys; contains does not count as a use.
        #expect(cache.contains(Self.key("a")))
        cache.put(Self.key("e"), Self.value, bytes: 20)
        #expect(cache.keysByRecency == [Self.key("e"), Self.key("c")])
        #expect(cache.bytes == 25 && cache.count == 2)
    }

    @Test("A key larger than the budget is not cached and evicts nothing")
    func oversizedKeyIgnored() {
        let cache = EvaluationKeyCache(capacity: 30)
        cache.put(Self.key("a"), Self.value, bytes: 30)
        cache.put(Self.key("b"), Self.value, bytes: 31)
        #expect(cache.keysByRecency == [Self.key("a")])
        #expect(cache.bytes == 30)
    }

    @Test("Invalidating a config drops each of its timestamps and nothing else; expiry drops the old uploads")
    func invalidateAndExpire() {
        let cache = EvaluationKeyCache(capacity: 100)
        cache.put(Self.key("a", timestamp: 1), Self.value, bytes: 10, uploadedAt: 100)
        cache.put(Self.key("a", timestamp: 2), Self.value, bytes: 10, uploadedAt: 200)
        cache.put(Self.key("a", config: 2), Self.value, bytes: 10, uploadedAt: 50)
        cache.put(Self.key("b"), Self.value, bytes: 10, uploadedAt: 300)
        cache.invalidate(user: "a", identifier: [1])
        #expect(cache.keysByRecency == [Self.key("b"), Self.key("a", config: 2)])
        #expect(cache.bytes == 20)
        #expect(cache.dropUploaded(before: 100) == 1)
        #expect(cache.keysByRecency == [Self.key("b")])
        // Slots freed above are reused: the order stays right.
        cache.put(Self.key("c"), Self.value, bytes: 10)
        cache.put(Self.key("a", timestamp: 3), Self.value, bytes: 10)
        #expect(cache.get(Self.key("b")) != nil)
        #expect(cache.keysByRecency == [Self.key("b"), Self.key("a", timestamp: 3), Self.key("c")])
        #expect(cache.bytes == 30)
    }

    @Test("Random gets, puts, invalidations and expiries leave the same keys, order and bytes as a plain model")
    func matchesModel() {
        var rng = TestRandom()
        let capacity = 200
        let cache = EvaluationKeyCache(capacity: capacity)
        // The model: entries most recently used first, evicting from the end.
        var model: [(key: EvaluationKeyCache.Key, bytes: Int, uploadedAt: Double)] = []
        for step in 0..<20_000 {
            let key = Self.key("u\(Int.random(in: 0..<40, using: &rng))", config: UInt8.random(in: 1...2, using: &rng),
                               timestamp: UInt64.random(in: 1...3, using: &rng))
            switch Int.random(in: 0..<20, using: &rng) {
            case 0..<9:
                let found = cache.get(key) != nil
                let index = model.firstIndex { $0.key == key }
                #expect(found == (index != nil), "get at step \(step) (seed \(rng.seed))")
                if let index { model.insert(model.remove(at: index), at: 0) }
            case 9..<18:
                let bytes = Int.random(in: 1...(capacity + 10), using: &rng)
                let uploadedAt = Double(step)
                cache.put(key, Self.value, bytes: bytes, uploadedAt: uploadedAt)
                guard bytes <= capacity else { break }
                model.removeAll { $0.key == key }
                model.insert((key, bytes, uploadedAt), at: 0)
                while model.reduce(0, { $0 + $1.bytes }) > capacity, model.count > 1 { model.removeLast() }
            case 18:
                cache.invalidate(user: key.user, identifier: key.identifier)
                model.removeAll { $0.key.user == key.user && $0.key.identifier == key.identifier }
            default:
                let cutoff = Double(step - Int.random(in: 0..<2_000, using: &rng))
                let expected = model.filter { $0.uploadedAt < cutoff }.count
                #expect(cache.dropUploaded(before: cutoff) == expected, "expiry at step \(step) (seed \(rng.seed))")
                model.removeAll { $0.uploadedAt < cutoff }
            }
            guard cache.keysByRecency == model.map(\.key), cache.bytes == model.reduce(0, { $0 + $1.bytes }) else {
                Issue.record("cache and model differ after step \(step) (seed \(rng.seed))")
                return
            }
        }
    }
}
