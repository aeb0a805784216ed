import ConformanceSupport
import Foundation
import LookupProtocol
import Testing
import URLFilter

/// The URL filter's building blocks against published vectors, and the prefilter's false-positive rate measured.
@Suite("URL filter: normalization, Punycode, Bloom prefilter")
struct URLFilterTests {
    @Test("Punycode matches RFC 3492's examples and common labels")
    func punycode() {
        #expect(Punycode.encode("bücher") == "bcher-kva")
        #expect(Punycode.encode("münchen") == "mnchen-3ya")
        // RFC 3492 §7.1 (L): 3<nen>B<gumi><kinpachi><sensei>.
        #expect(Punycode.encode("3年B組金八先生") == "3B-ww4c5e180e575a65lsy2b")
        // (J) Spanish: Porqu<e-acute>nopuedensimplementehablarenEspa<n-tilde>ol.
        #expect(Punycode.encode("Porquénopuedensimplementehablarenespañol") == "Porqunopuedensimplementehablarenespaol-fmd56a")
    }

    @Test("FNV-1a and MurmurHash3 match their published values")
    func hashes() {
        #expect(BloomPrefilter.fnv1a32([]) == 0x811C_9DC5)
        #expect(BloomPrefilter.fnv1a32(Array("a".utf8)) == 0xE40C_292C)
        #expect(BloomPrefilter.fnv1a32(Array("foobar".utf8)) == 0xBF9C_F968)
        #expect(BloomPrefilter.murmur3x86_32([], seed: 0) == 0)
        #expect(BloomPrefilter.murmur3x86_32([], seed: 1) == 0x514E_28B7)
        #expect(BloomPrefilter.murmur3x86_32([0xFF, 0xFF, 0xFF, 0xFF], seed: 0) == 0x7629_3B50)
        #expect(BloomPrefilter.murmur3x86_32([0x21, 0x43, 0x65], seed: 0) == 0x7E4A_8634)
        #expect(BloomPrefilter.murmur3x86_32(Array("Hello, world!".utf8), seed: 0x9747_B28C) == 0x2488_4CBA)
    }

    @Test("URLs are normalized as NEURLFilterManager matches them")
    func normalization() throws {
        #expect(try URLNormalizer.normalize("https://www.Example.com/A/b?id=1#F") == "example.com/a/b?id=1#f")
        #expect(try URLNormalizer.normalize("HTTP://Sub.Example.com:8443/x") == "sub.example.com:8443/x")
        #expect(try URLNormalizer.normalize("example.com") == "example.com")
        #expect(try URLNormalizer.normalize("www.com") == "www.com")
        #expect(try URLNormalizer.normalize("https://bücher.example/") == "xn--bcher-kva.example/")
        for bad in ["", "https://", "exa mple.com", "user@example.com/x", "example.com:99999", "a..b", "ftp ://x", String(repeating: "a", count: 3000)] {
            #expect(throws: URLFilterError.self, "\(bad.prefix(20))") { try URLNormalizer.normalize(bad) }
        }
    }

    @Test("the prefilter holds every listed URL and its false-positive rate is the configured one within 20 %")
    func falsePositiveRate() throws {
        var random = TestRandom()
        let urls = (0..<5000).map { "site\($0)-\(random.next() % 1_000_000).example/path/\(random.next() % 1000)" }
        let list = try URLFilterList(text: urls.joined(separator: "\n"))
        for rate in [0.01, 0.001] {
            let filter = try list.prefilter(falsePositiveRate: rate)
            #expect(list.urls.allSatisfy(filter.mayContain), "no false negatives")
            let trials = rate == 0.01 ? 200_000 : 1_000_000
            var positives = 0
            for i in 0..<trials where filter.mayContain("other\(i)-\(random.next()).test/\(i)") { positives += 1 }
            let measured = Double(positives) / Double(trials)
            print("prefilter: \(list.urls.count) URLs, \(filter.bitCount) bits, \(filter.hashCount) hashes, configured \(rate), measured \(measured)")
            #expect(abs(measured - rate) <= 0.2 * rate, "measured \(measured) for \(rate)")
        }
    }
}
