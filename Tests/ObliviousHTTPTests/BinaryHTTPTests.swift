import ObliviousHTTP
import Testing

/// RFC 9292's examples, byte for byte, and bad input refused with a typed error.
@Suite("Binary HTTP (RFC 9292)")
struct BinaryHTTPTests {
    /// Figure 8: a known-length GET request.
    static let figure8 = unhex("""
        0003474554056874747073000a2f68656c6c6f2e747874406c0a757365722d6167656e74346375726c2f372e31362e33206c69626375726c2f372e31
        362e33204f70656e53534c2f302e392e376c207a6c69622f312e322e3304686f73740f7777772e6578616d706c652e636f6d0f6163636570742d6c61
        6e677561676506656e2c206d690000
        """)
    /// Figure 9: the same request, indeterminate-length, with 10 bytes of padding.
    static let figure9 = unhex("""
        0203474554056874747073000a2f68656c6c6f2e7478740a757365722d6167656e74346375726c2f372e31362e33206c69626375726c2f372e31362e
        33204f70656e53534c2f302e392e376c207a6c69622f312e322e3304686f73740f7777772e6578616d706c652e636f6d0f6163636570742d6c616e67
        7561676506656e2c206d6900000000000000000000000000
        """)
    /// Figure 11: an indeterminate-length response with informational responses 102 and 103.
    static let figure11 = unhex("""
        0340660772756e6e696e670a22736c65657020313522004067046c696e6b233c2f7374796c652e6373733e3b2072656c3d7072656c6f61643b206173
        3d7374796c65046c696e6b243c2f7363726970742e6a733e3b2072656c3d7072656c6f61643b2061733d7363726970740040c804646174651d4d6f6e
        2c203237204a756c20323030392031323a32383a353320474d5406736572766572064170616368650d6c6173742d6d6f6469666965641d5765642c20
        3232204a756c20323030392031393a31353a353620474d5404657461671422333461613338372d642d3135363865623030220d6163636570742d7261
        6e6765730562797465730e636f6e74656e742d6c656e67746802353104766172790f4163636570742d456e636f64696e670c636f6e74656e742d7479
        70650a746578742f706c61696e003348656c6c6f20576f726c6421204d7920636f6e74656e7420696e636c75646573206120747261696c696e672043
        524c462e0d0a0000
        """)
    /// Figure 13: a known-length response with a trailer.
    static let figure13 = unhex("0140c8001d5468697320636f6e74656e7420636f6e7461696e732043524c462e0d0a0d07747261696c65720474657874")

    static let helloHeaders = [BinaryHTTPField("user-agent", "curl/7.16.3 libcurl/7.16.3 OpenSSL/0.9.7l zlib/1.2.3"),
                               BinaryHTTPField("host", "www.example.com"), BinaryHTTPField("accept-language", "en, mi")]

    @Test("Figure 8 decodes, and the encoder writes it back byte for byte")
    func figure8RoundTrip() throws {
        let request = try BinaryHTTPRequest(decoding: Self.figure8)
        #expect(request == BinaryHTTPRequest(method: "GET", scheme: "https", authority: "", path: "/hello.txt", headers: Self.helloHeaders))
        #expect(try request.encoded() == Self.figure8)
    }

    @Test("Figure 9 (indeterminate length, padded) is the same request; truncation at a section start changes nothing")
    func figure9AndTruncation() throws {
        let known = try BinaryHTTPRequest(decoding: Self.figure8)
        #expect(try BinaryHTTPRequest(decoding: Self.figure9) == known)
        for cut in [1, 5, 10, 11, 12] { #expect(try BinaryHTTPRequest(decoding: Array(Self.figure9.dropLast(cut))) == known, "cut \(cut)") }
        for cut in [1, 2] { #expect(try BinaryHTTPRequest(decoding: Array(Self.figure8.dropLast(cut))) == known, "cut \(cut)") }
        // Cut into the header section: refused.
        #expect(throws: BinaryHTTPError.self) { try BinaryHTTPRequest(decoding: Array(Self.figure9.dropLast(13))) }
    }

    @Test("Figure 11: informational responses 102 and 103, then the final response")
    func figure11() throws {
        let response = try BinaryHTTPResponse(decoding: Self.figure11)
        #expect(response.informational.map(\.status) == [102, 103])
        #expect(response.informational[0].headers == [BinaryHTTPField("running", "\"sleep 15\"")])
        #expect(response.informational[1].headers.map(\.name) == ["link", "link"])
        #expect(response.status == 200)
        #expect(response.header("content-length") == "51")
        #expect(response.header("etag") == "\"34aa387-d-1568eb00\"")
        #expect(response.content == Array("Hello World! My content includes a trailing CRLF.\r\n".utf8))
        #expect(response.trailers.isEmpty)
    }

    @Test("Figure 13: a trailer; the encoder writes it back byte for byte; RFC 9458's minimal response")
    func figure13() throws {
        let response = try BinaryHTTPResponse(decoding: Self.figure13)
        #expect(response == BinaryHTTPResponse(status: 200, content: Array("This content contains CRLF.\r\n".utf8),
                                               trailers: [BinaryHTTPField("trailer", "text")]))
        #expect(try response.encoded() == Self.figure13)
        #expect(try BinaryHTTPResponse(decoding: unhex("0140c8")) == BinaryHTTPResponse(status: 200))
        #expect(try BinaryHTTPResponse(status: 200).encoded() == unhex("0140c8000000"))
    }

    @Test("Padding is zeros only; a padded encoding decodes to the same message")
    func padding() throws {
        let response = BinaryHTTPResponse(status: 200, content: Array("hi".utf8))
        let padded = try response.encoded(padding: 64)
        #expect(padded.count == 64)
        #expect(try BinaryHTTPResponse(decoding: padded) == response)
        var dirty = padded
        dirty[63] = 1
        #expect(throws: BinaryHTTPError.self) { try BinaryHTTPResponse(decoding: dirty) }
    }

    @Test("Bad messages get their error code: framing, truncation, lengths, fields, control data, limits")
    func badInput() throws {
        func code(_ bytes: [UInt8], response: Bool = false, limits: BinaryHTTPLimits = .init()) -> BinaryHTTPError.Code? {
            do {
                if response { _ = try BinaryHTTPResponse(decoding: bytes, limits: limits) } else { _ = try BinaryHTTPRequest(decoding: bytes, limits: limits) }
                return nil
            } catch let error as BinaryHTTPError {
                return error.code
            } catch {
                return nil
            }
        }
        #expect(code(Self.figure13) == .invalidFraming)  // a response where a request is expected
        #expect(code(Self.figure8, response: true) == .invalidFraming)
        #expect(code([]) == .truncated)
        #expect(code(Array(Self.figure8.prefix(8))) == .truncated)
        #expect(code(Array(Self.figure8.prefix(40))) == .truncated)
        // A length far beyond the message never allocates.
        #expect(code(unhex("000347455405687474707300012f") + unhex("bfffffff")) == .tooLarge)
        #expect(code(unhex("000347455405687474707300012f") + unhex("4fff")) == .truncated)
        // Hand-built requests with one bad part each.
        func raw(method: String = "GET", path: String = "/x", fields: [(String, String)] = [], tail: [UInt8] = [0, 0]) -> [UInt8] {
            func lp(_ s: String) -> [UInt8] { [UInt8(s.utf8.count)] + Array(s.utf8) }
            let section = fields.flatMap { lp($0.0) + lp($0.1) }
            return [0] + lp(method) + lp("https") + lp("") + lp(path) + [UInt8(section.count)] + section + tail
        }
        #expect(code(raw(fields: [("accept", "*/*")])) == nil)
        #expect(code(raw(fields: [(":method", "POST")])) == .invalidField)
        #expect(code(raw(fields: [("Accept", "*/*")])) == .invalidField)
        #expect(code(raw(fields: [("bad name", "x")])) == .invalidField)
        #expect(code(raw(fields: [("x", "a\r\nb: c")])) == .invalidField)
        #expect(code(raw(fields: [("x", " a")])) == .invalidField)
        #expect(code(raw(method: "GE T")) == .invalidControlData)
        #expect(code(raw(path: "/a b")) == .invalidControlData)
        #expect(code(raw(path: "")) == .invalidControlData)
        #expect(code(raw(tail: [0, 0, 1])) == .nonZeroPadding)
        var limits = BinaryHTTPLimits()
        limits.maxFields = 2
        #expect(code(raw(fields: [("a", "1"), ("b", "2"), ("c", "3")]), limits: limits) == .tooLarge)
        // The encoder refuses what it must not write.
        #expect(throws: BinaryHTTPError.self) { try BinaryHTTPRequest(method: "GET", path: "").encoded() }
        #expect(throws: BinaryHTTPError.self) { try BinaryHTTPResponse(status: 99).encoded() }
        #expect(throws: BinaryHTTPError.self) { try BinaryHTTPRequest(method: "GET", path: "/", headers: [BinaryHTTPField("X", "1")]).encoded() }
    }

    @Test("Random and mutated messages are decoded or refused with a BinaryHTTPError, never a crash (seeded)")
    func mutations() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["CALLVEIL_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
        print("BinaryHTTP mutations: seed \(seed) (CALLVEIL_SEED=\(seed) to repeat)")
        var state = seed
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let seeds = [Self.figure8, Self.figure9, Self.figure11, Self.figure13]
        var decoded = 0
        for i in 0..<4000 {
            var bytes = seeds[i % seeds.count]
            for _ in 0...(i % 4) { bytes[Int(next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: next()) }
            if i % 3 == 0 { bytes = Array(bytes.prefix(Int(next() % UInt64(bytes.count + 1)))) }
            for response in [false, true] {
                do {
                    if response { _ = try BinaryHTTPResponse(decoding: bytes) } else { _ = try BinaryHTTPRequest(decoding: bytes) }
                    decoded += 1
                } catch is BinaryHTTPError {
                } catch {
                    Issue.record("an error that is not a BinaryHTTPError: \(error)")
                }
            }
        }
        #expect(decoded > 0)  // some mutations leave a valid message (a changed field value)
    }
}

import Foundation
