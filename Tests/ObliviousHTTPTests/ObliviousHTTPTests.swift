import Crypto
import Foundation
import ObliviousHTTP
import Testing

/// RFC 9458: the worked example of Appendix A byte for byte on the gateway's side, round trips with both suites,
/// and every kind of bad encapsulation refused with its code.
@Suite("Oblivious HTTP (RFC 9458)")
struct ObliviousHTTPTests {
    enum Example {
        static let privateKey = unhex("3c168975674b2fa8e465970b79c8dcf09f1c741626480bd4c6162fc5b6a98e1a")
        static let keyConfig = unhex("01002031e1f05a740102115220e9af918f738674aec95f54db6e04eb705aae8e79815500080001000100010003")
        static let request = unhex("00034745540568747470730b6578616d706c652e636f6d012f")
        static let encapsulatedRequest = unhex("""
            010020000100014b28f881333e7c164ffc499ad9796f877f4e1051ee6d31bad19dec96c208b4726374e469135906992e1268c594d2a10c695d85
            8c40a026e7965e7d86b83dd440b2c0185204b4d63525
            """)
        static let response = unhex("0140c8")
        static let responseNonce = unhex("c789e7151fcba46158ca84b04464910d")
        static let encapsulatedResponse = unhex("c789e7151fcba46158ca84b04464910d86f9013e404feea014e7be4a441f234f857fbd")
    }

    static func exampleGateway() throws -> OHTTPGateway {
        let key = try OHTTPGatewayKey(keyID: 1, privateKey: Curve25519.KeyAgreement.PrivateKey(rawRepresentation: Example.privateKey),
                                      suites: [.x25519AES128GCM, .x25519ChaChaPoly])
        return try OHTTPGateway(keys: [key])
    }

    @Test("Appendix A: the key configuration, the request opened, and the response sealed, byte for byte")
    func appendixA() throws {
        let gateway = try Self.exampleGateway()
        #expect(gateway.keys[0].config.encoded == Example.keyConfig)
        #expect(try OHTTPKeyConfig(decoding: Example.keyConfig) == gateway.keys[0].config)
        #expect(gateway.publishedConfigs == [0x00, 0x2d] + Example.keyConfig)
        let opened = try gateway.decapsulate(Example.encapsulatedRequest)
        #expect(opened.request == Example.request)
        let request = try BinaryHTTPRequest(decoding: opened.request)
        #expect(request.method == "GET" && request.scheme == "https" && request.authority == "example.com" && request.path == "/")
        #expect(try opened.context.encapsulate(Example.response, nonce: Example.responseNonce) == Example.encapsulatedResponse)
        // With a fresh nonce the response differs, and is still the same length.
        let fresh = try opened.context.encapsulate(Example.response)
        #expect(fresh != Example.encapsulatedResponse && fresh.count == Example.encapsulatedResponse.count)
    }

    @Test("A client request to the example key opens at the gateway and the client opens the answer, with both suites")
    func roundTrip() throws {
        let gateway = try Self.exampleGateway()
        let config = try #require(try OHTTPKeyConfig.decodeList(gateway.publishedConfigs).first)
        for suite in [OHTTPSuite.x25519AES128GCM, .x25519ChaChaPoly] {
            let body = try BinaryHTTPRequest(method: "POST", authority: "lookup.example", path: "/queries",
                                             headers: [BinaryHTTPField("content-type", "application/octet-stream")],
                                             content: Array(repeating: 7, count: 1000)).encoded()
            let sent = try OHTTPClientRequest(body, config: config, suite: suite)
            #expect(Array(sent.encapsulated.prefix(7)) == [1, 0, 0x20, 0, 1, 0, UInt8(suite.aead)])
            let opened = try gateway.decapsulate(sent.encapsulated)
            #expect(opened.request == body)
            let answer = try BinaryHTTPResponse(status: 200, content: Array("ok".utf8)).encoded()
            #expect(try sent.openResponse(try opened.context.encapsulate(answer)) == answer)
            // Another request's response does not open as this one's.
            let other = try OHTTPClientRequest(body, config: config, suite: suite)
            let otherAnswer = try gateway.decapsulate(other.encapsulated).context.encapsulate(answer)
            #expect(throws: OHTTPError.self) { try sent.openResponse(otherAnswer) }
        }
    }

    @Test("Bad encapsulations: unknown key id, unoffered suite, truncated, tampered, too large, another key; bad key lists")
    func badInput() throws {
        let gateway = try Self.exampleGateway()
        func code(_ message: [UInt8], at gateway: OHTTPGateway) -> OHTTPError.Code? {
            do {
                _ = try gateway.decapsulate(message)
                return nil
            } catch let error as OHTTPError {
                return error.code
            } catch {
                return nil
            }
        }
        let request = Example.encapsulatedRequest
        func with(_ index: Int, _ value: UInt8) -> [UInt8] {
            var copy = request
            copy[index] = value
            return copy
        }
        #expect(code(with(0, 2), at: gateway) == .unknownKeyID)
        #expect(code(with(2, 0x10), at: gateway) == .unsupportedCipherSuite)  // P-256, not offered
        #expect(code(with(4, 2), at: gateway) == .unsupportedCipherSuite)  // HKDF-SHA384
        #expect(code(with(6, 2), at: gateway) == .unsupportedCipherSuite)  // AES-256-GCM, not offered by this key
        #expect(code(Array(request.prefix(5)), at: gateway) == .invalidMessage)
        #expect(code(Array(request.prefix(30)), at: gateway) == .invalidMessage)
        #expect(code(Array(request.prefix(60)), at: gateway) == .decryptionFailed)
        for index in [7, 20, 45, 60, request.count - 1] {
            var tampered = request
            tampered[index] ^= 1
            #expect(code(tampered, at: gateway) == .decryptionFailed, "byte \(index)")
        }
        let small = try OHTTPGateway(keys: gateway.keys, maxRequestBytes: 64)
        #expect(code(request, at: small) == .messageTooLarge)
        let stranger = try OHTTPGateway(keys: [try OHTTPGatewayKey.generate(keyID: 1)])
        #expect(code(request, at: stranger) == .decryptionFailed)
        // Key configurations: any encoding error rejects the list.
        #expect(throws: OHTTPError.self) { try OHTTPKeyConfig(decoding: Array(Example.keyConfig.dropLast())) }
        #expect(throws: OHTTPError.self) { try OHTTPKeyConfig(decoding: Example.keyConfig + [0]) }
        #expect(throws: OHTTPError.self) { try OHTTPKeyConfig.decodeList([0x00, 0x2e] + Example.keyConfig) }
        var odd = Example.keyConfig
        odd[36] = 6  // algorithms length not a multiple of 4
        #expect(throws: OHTTPError.self) { try OHTTPKeyConfig(decoding: odd) }
        #expect(throws: OHTTPError.self) { try OHTTPGateway(keys: [gateway.keys[0], gateway.keys[0]]) }
    }
}
