import LookupEngine
import LookupWorker
import PIR
import ServiceCore
import Testing

/// Engine errors cross the cluster by code: a worker's error reaches the phone as the answer the same error gets
/// in a single process, or as a retry on another replica.
@Suite("Engine error codes across the cluster")
struct ErrorCodeTests {
    @Test("Every engine code has its own wire code and back; the ones not retried come back as the same code and HTTP answer")
    func everyCode() {
        var wires: Set<ClusterErrorCode> = []
        for code in EngineError.Code.all {
            let error = code == .evaluationKeyNotFound ? EngineError.evaluationKeyNotFound : EngineError(code, "reason \(code)")
            let (wire, message) = ClusterErrorCode.from(error)
            #expect(message == error.message, "\(code)")
            #expect(wire.engineCode == code, "\(code) crossed as \(wire), which means \(String(describing: wire.engineCode))")
            #expect(wires.insert(wire).inserted, "\(code) shares its wire code \(wire)")
            guard !wire.isRetryable else {
                // Retried on another replica; when none answers, the coordinator answers 503.
                #expect(LookupError(EngineError(.unavailable, "")).status.code == 503, "\(code)")
                continue
            }
            let back = wire.engineError(message: message)
            #expect(back.code == code, "\(code) came back as \(back.code)")
            #expect(LookupError(back) == LookupError(error), "\(code): \(LookupError(back)) against \(LookupError(error))")
        }
    }

    @Test("Library errors on a query's content travel as a bad request with their reason")
    func clientInput() throws {
        let (wire, message) = ClusterErrorCode.from(PIRError.invalidQuery("2 ciphertexts"))
        #expect(wire == .badRequest)
        #expect(message == "Invalid PIR request: invalid PIR query: 2 ciphertexts")
        #expect(LookupError(wire.engineError(message: message)).status.code == 400)
    }

    @Test("The PIR core's failure to map a query's memory is an overload (503 with Retry-After), not a bad request")
    func outOfMemory() throws {
        let engine = try #require(EngineError(clientInput: PIRError.outOfMemory("cannot map 8 MiB")))
        #expect(engine.code == .overloaded)
        let lookup = LookupError(engine)
        #expect(lookup.status.code == 503)
        #expect(lookup.retryAfter != nil)
    }
}
