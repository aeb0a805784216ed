import BFV
import ConformanceSupport
import Testing

/// The reference's HE vectors that need no protobuf: DRBG, seed expansion, samplers, NTT, Galois maps,
/// secret-key bytes and the response skip counts (SPEC-HE §15.3 steps 1–4).
@Suite("HE conformance vectors (engine level)", .enabled(if: Conformance.available, Comment(rawValue: Conformance.skipMessage)))
struct HEVectorTests {
    static func context(_ v: Vector) throws -> Context {
        let moduli = try v.uints("coefficientModuli")
        let n = try v.int("degree")
        let params = try EncryptionParameters(
            polyDegree: n, plaintextModulus: try v.uint64("plaintextModulus"), coefficientModuli: moduli,
            securityLevel: n >= 1024 ? .quantum128 : .unchecked)
        return try Context(parameters: params)
    }

    @Test("DRBG stream, 4096-byte Generate calls", arguments: Conformance.heVectorNames)
    func drbg(file: String) throws {
        let v = try Conformance.heVector(file)
        let d = try v.sub("drbg")
        let seed = try d.hex("seed")
        let expected = try d.hex("first8192")
        var stream = try SeededByteStream(seed: seed)
        #expect(stream.next(8192) == expected)
        var drbg = try NistCtrDrbg(seed: seed)
        #expect(try drbg.generate(count: 4096) == Array(expected.prefix(4096)))
        print("checked \(file): drbg")
    }

    @Test("DRBG stream read in place and filled, in pieces of any size across Generate calls",
          arguments: Conformance.heVectorNames)
    func drbgPieces(file: String) throws {
        let d = try Conformance.heVector(file).sub("drbg")
        let expected = try d.hex("first8192")
        var rng = TestRandom()
        var stream = try SeededByteStream(seed: try d.hex("seed"))
        var got: [UInt8] = []
        while got.count < expected.count {
            let n = min(Int.random(in: 1...3000, using: &rng), expected.count - got.count)
            if Bool.random(using: &rng) { stream.read(n) { got += $0 } } else { got += stream.next(n) }
        }
        #expect(got == expected)
    }

    @Test("uniform seed expansion in Eval and Coeff form", arguments: Conformance.heVectorNames)
    func uniform(file: String) throws {
        let v = try Conformance.heVector(file)
        let ctx = try Self.context(v)
        let u = try v.sub("uniform")
        let seed = try u.hex("seed")
        let ctContext = try PolyContext(degree: ctx.degree, moduli: try u.uints("ciphertextModuli"))
        let eval = try Sampling.uniform(context: ctContext, seed: seed)
        #expect(eval.rows == (try u.rows("eval")))
        #expect(eval.converted(to: .coeff).rows == (try u.rows("coeff")))
        let keyContext = try PolyContext(degree: ctx.degree, moduli: try u.uints("keyModuli"))
        #expect(try Sampling.uniform(context: keyContext, seed: seed).rows == (try u.rows("keyEval")))
        print("checked \(file): uniform")
    }

    @Test("ternary and centred-binomial samplers", arguments: Conformance.heVectorNames)
    func sampling(file: String) throws {
        let v = try Conformance.heVector(file)
        let ctx = try Self.context(v)
        let s = try v.sub("sampling")
        let q0 = ctx.keyContext.moduli[0]
        var stream = try SeededByteStream(seed: try s.hex("seed"))
        #expect(Sampling.ternary(count: ctx.degree, source: &stream).map(q0.residue) == (try s.uints("ternaryRow0")))
        stream = try SeededByteStream(seed: try s.hex("seed"))
        #expect(Sampling.centeredBinomial(count: ctx.degree, source: &stream).map(q0.residue) == (try s.uints("cbdRow0")))
        print("checked \(file): sampling")
    }

    @Test("forward and inverse NTT", arguments: Conformance.heVectorNames)
    func ntt(file: String) throws {
        let v = try Conformance.heVector(file)
        let ctx = try Self.context(v)
        let t = try v.sub("ntt")
        let input = try t.rows("input")
        let pctx = try ctx.context(moduliCount: input.count)
        let poly = try PolyRq(context: pctx, format: .coeff, rows: input)
        let eval = poly.converted(to: .eval)
        #expect(eval.rows == (try t.rows("output")))
        #expect(eval.converted(to: .coeff) == poly)
        print("checked \(file): ntt")
    }

    @Test("Galois maps in both formats", arguments: Conformance.heVectorNames)
    func galois(file: String) throws {
        let v = try Conformance.heVector(file)
        let ctx = try Self.context(v)
        for g in try v.subs("galois") {
            let element = try g.int("element")
            let coeffIn = try g.rows("coeffIn")
            let pctx = try ctx.context(moduliCount: coeffIn.count)
            let c = try PolyRq(context: pctx, format: .coeff, rows: coeffIn)
            #expect(try Galois.apply(c, element: element).rows == (try g.rows("coeffOut")))
            let e = try PolyRq(context: pctx, format: .eval, rows: try g.rows("evalIn"))
            #expect(try Galois.apply(e, element: element).rows == (try g.rows("evalOut")))
        }
        print("checked \(file): galois")
    }

    @Test("deterministic secret key and its bytes", arguments: Conformance.heVectorNames)
    func secretKey(file: String) throws {
        let v = try Conformance.heVector(file)
        let ctx = try Self.context(v)
        let sk = try v.sub("secretKey")
        var stream = try SeededByteStream(seed: try sk.hex("seedForTernary"))
        let key = SecretKey(context: ctx, source: &stream)
        #expect(key.poly.converted(to: .coeff).row(0) == (try sk.uints("coeffRow0")))
        #expect(key.serialize() == (try sk.hex("serializedPolys")))
        let parsed = try SecretKey(deserialize: try sk.hex("serializedPolys"), context: ctx)
        #expect(parsed.poly == key.poly)
        print("checked \(file): secretKey")
    }

    @Test("skip counts of the response format", arguments: Conformance.heVectorNames)
    func skipLSBs(file: String) throws {
        let v = try Conformance.heVector(file)
        let ctx = try Self.context(v)
        guard v.has("modSwitchedForDecryption") else { return }
        let expected = try v.sub("modSwitchedForDecryption").uints("skipLSBs").map { Int($0) }
        #expect(ctx.skipLSBsForDecryption == expected)
        print("checked \(file): skipLSBs \(expected)")
    }
}

/// Under our CI the vectors must be there: a missing folder fails the run instead of skipping.
@Test("conformance folder present under CI")
func conformanceFolderPresentUnderCI() {
    if Conformance.isCI {
        #expect(Conformance.available, "CI=true but ../shared/conformance (or $CALLVEIL_CONFORMANCE) is missing")
        #expect(Conformance.heVectorNames.count >= 11, "expected the 11 HE vector files")
    } else if !Conformance.available {
        print(Conformance.skipMessage)
    }
}
