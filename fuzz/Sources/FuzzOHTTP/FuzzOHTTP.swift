import Crypto
import FuzzSupport
import ObliviousHTTP

/// Oblivious HTTP and Binary HTTP decoders: the first byte picks one. 0: an encapsulated request opened by a
/// gateway holding RFC 9458 Appendix A's key (and, when it opens, its Binary HTTP decoded); 1: a Binary HTTP
/// request; 2: a Binary HTTP response; 3: a key-configuration list (`application/ohttp-keys`); 4: the rest as a
/// Binary HTTP request inside a valid encapsulation, opened and decoded as the gateway does; 5: an encapsulated
/// response opened by a client.
let key = try! OHTTPGatewayKey(keyID: 1, privateKey: Curve25519.KeyAgreement.PrivateKey(rawRepresentation:
    hex("3c168975674b2fa8e465970b79c8dcf09f1c741626480bd4c6162fc5b6a98e1a")), suites: [.x25519AES128GCM, .x25519ChaChaPoly])
let gateway = try! OHTTPGateway(keys: [key], maxRequestBytes: 1 << 20)

func hex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var index = s.startIndex
    while index < s.endIndex {
        let next = s.index(index, offsetBy: 2)
        out.append(UInt8(s[index..<next], radix: 16)!)
        index = next
    }
    return out
}

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    Seeds.writeIfRequested {
        let request = try BinaryHTTPRequest(method: "POST", authority: "lookup.example", path: "/queries",
                                            headers: [BinaryHTTPField("user-identifier", "u"), BinaryHTTPField("authorization", "PrivateToken token=AAAA")],
                                            content: Array(repeating: 7, count: 64)).encoded()
        let response = try BinaryHTTPResponse(status: 200, headers: [BinaryHTTPField("content-type", "application/x-protobuf")],
                                              content: Array(repeating: 9, count: 64)).encoded()
        let encapsulated = try OHTTPClientRequest(request, config: key.config)
        return [
            "rfc9458-request": [0] + hex("010020000100014b28f881333e7c164ffc499ad9796f877f4e1051ee6d31bad19dec96c208b4726374e469135906992e1268c594d2a10c695d858c40a026e7965e7d86b83dd440b2c0185204b4d63525"),
            "encapsulated-queries": [0] + encapsulated.encapsulated,
            "bhttp-request": [1] + request, "bhttp-response": [2] + response,
            "rfc9292-fig8": [1] + hex("0003474554056874747073000a2f68656c6c6f2e747874406c0a757365722d6167656e74346375726c2f372e31362e33206c69626375726c2f372e31362e33204f70656e53534c2f302e392e376c207a6c69622f312e322e3304686f73740f7777772e6578616d706c652e636f6d0f6163636570742d6c616e677561676506656e2c206d690000"),
            "rfc9292-fig13": [2] + hex("0140c8001d5468697320636f6e74656e7420636f6e7461696e732043524c462e0d0a0d07747261696c65720474657874"),
            "key-configs": [3] + OHTTPKeyConfig.encodeList([key.config]),
            "inner-request": [4] + request,
            "rfc9458-response": [5] + hex("c789e7151fcba46158ca84b04464910d86f9013e404feea014e7be4a441f234f857fbd"),
        ]
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = input(start, count)
    guard let selector = bytes.first else { return 0 }
    let rest = Array(bytes.dropFirst())
    switch selector % 6 {
    case 0:
        if let opened = try? gateway.decapsulate(rest) {
            _ = try? BinaryHTTPRequest(decoding: opened.request)
            _ = try? opened.context.encapsulate(rest)
        }
    case 1:
        if let request = try? BinaryHTTPRequest(decoding: rest) { _ = try? request.encoded() }
    case 2:
        if let response = try? BinaryHTTPResponse(decoding: rest) { _ = try? response.encoded() }
    case 3:
        _ = try? OHTTPKeyConfig.decodeList(rest)
    case 4:
        guard let client = try? OHTTPClientRequest(rest, config: key.config), let opened = try? gateway.decapsulate(client.encapsulated),
              opened.request == rest else { fatalError("a valid encapsulation did not round-trip") }
        _ = try? BinaryHTTPRequest(decoding: opened.request)
    default:
        guard let client = try? OHTTPClientRequest([0], config: key.config) else { fatalError("encapsulation failed") }
        _ = try? client.openResponse(rest)
    }
    return 0
}
