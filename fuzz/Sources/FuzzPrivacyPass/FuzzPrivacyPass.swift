import Foundation
import FuzzSupport
import LookupService
import PrivacyPass

/// Privacy Pass input: the first byte picks the decoder. Even: the rest is an `Authorization` header value for the
/// PIR endpoints (scheme and parameter parsing, base64url, token layout, challenge digest, key id, RSA
/// verification, the nonce store). Odd: the rest is an `/issue` body (token request layout, key id, blind signing).
@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    Seeds.writeIfRequested {
        [
            "header-valid": [0] + Array(try SeedRecorder.tokenHeader().utf8),
            "header-other-issuer": [0] + Array(try SeedRecorder.tokenHeader(issuerName: "other.example").utf8),
            "issue-valid": [1] + (try SeedRecorder.issueBody()),
        ]
    }
    withoutLeakChecks { _ = verifier }
    return 0
}

let verifier: PrivacyPassVerifier = {
    let server = Fixture.server
    return server.privacyPass.verifier!
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = input(start, count)
    guard let selector = bytes.first else { return 0 }
    let rest = Array(bytes.dropFirst())
    if selector % 2 == 0 {
        let header = String(decoding: rest, as: UTF8.self)
        _ = blocking { try await verifier.verify(authorization: header) }
    } else {
        guard let request = try? TokenRequest(deserialize: rest),
              let issuer = Fixture.server.privacyPass.keys?.issuer(forTier: "tier1") else { return 0 }
        _ = try? issuer.issue(request)
    }
    return 0
}
