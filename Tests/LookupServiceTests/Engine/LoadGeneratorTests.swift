import Foundation
import LoadGeneration
import LookupClient
import LookupService
import ServiceTestSupport
import Testing

/// The bench harness's load generator: phones set up keys, look numbers up, and every answer is checked, so a
/// server that answers wrongly (here: a truth that disagrees with the served shard) is caught.
@Suite("Load generator")
struct LoadGeneratorTests {
    @Test("Closed and open loop against a real server; wrong answers are counted, never passed")
    func checksAnswers() async throws {
        let directory = try temporaryDirectory()
        let data = try DemoDataset.make(in: directory, count: 120)
        let server = try await TestServer.start(configPath: try writeServiceConfig(in: directory, usecases: data.useCases))
        let truth = try LoadGenerator.Truth(records: data.records, absent: [DemoDataset.absentNumber])
        let generator = LoadGenerator(url: server.url, blockUseCase: DemoDataset.block, identityUseCase: DemoDataset.identity,
                                      phones: 2, userToken: "AAAA", presentFraction: 0.75)
        let closed = try await generator.run(mode: .closed, duration: .seconds(2), truth: truth)
        #expect(closed.lookups > 0 && closed.mismatches == 0 && closed.errors == 0)
        #expect(closed.blockLatencies.count == closed.lookups && closed.keyUploadBytes > 100_000)
        #expect(closed.queryBytesUp > 0 && closed.queryBytesDown > 0)
        let open = try await generator.run(mode: .open(rate: 4), duration: .seconds(2), truth: truth, seed: 2)
        #expect(open.lookups >= 6 && open.mismatches == 0 && open.errors == 0)

        // The served block shard says the opposite of this truth: every present lookup is a mismatch.
        let wrong = LoadGenerator.Truth(present: try data.records.map { ($0.number, [$0.block ? 0 : 1], try $0.callIdentity()) },
                                        absent: [DemoDataset.absentNumber])
        let caught = try await LoadGenerator(url: server.url, blockUseCase: DemoDataset.block, identityUseCase: DemoDataset.identity,
                                             phones: 2, userToken: "AAAA", presentFraction: 1).run(mode: .closed, duration: .seconds(1), truth: wrong)
        #expect(caught.lookups > 0 && caught.mismatches >= caught.lookups)  // warm-up mismatches count too

        // A reload under way: the first ten numbers' block values are changing. Until the change has converged the
        // old or the new value is right; after, only the new one.
        let changing = Set(data.records.prefix(10).map(\.number))
        func reloadTruth(servedIsNew: Bool, converged: Bool) throws -> LoadGenerator.Truth {
            let present = try data.records.map { r -> (String, [UInt8], [UInt8]?) in
                (r.number, [UInt8]([r.block != (changing.contains(r.number) && servedIsNew) ? 1 : 0]), try r.callIdentity())
            }
            var alternatives: [String: (block: [UInt8]?, identity: [UInt8]?)] = [:]
            for r in data.records where changing.contains(r.number) {
                alternatives[r.number] = ([r.block != !servedIsNew ? 1 : 0], try r.callIdentity())
            }
            return LoadGenerator.Truth(present: present, absent: [DemoDataset.absentNumber], alternatives: alternatives, converged: { converged })
        }
        let reloading = LoadGenerator(url: server.url, blockUseCase: DemoDataset.block, identityUseCase: DemoDataset.identity,
                                      phones: 2, userToken: "AAAA", presentFraction: 1)
        for (servedIsNew, converged) in [(true, false), (false, false), (true, true)] {  // served = either, or new after
            let r = try await reloading.run(mode: .closed, duration: .seconds(1), truth: try reloadTruth(servedIsNew: servedIsNew, converged: converged))
            #expect(r.lookups > 0 && r.mismatches == 0, "served the \(servedIsNew ? "new" : "old") value, converged: \(converged)")
        }
        // Converged, but the server still answers the old value for the changed numbers (a tenth of the lookups
        // go to them): caught.
        let stale = try await reloading.run(mode: .closed, duration: .seconds(2), truth: try reloadTruth(servedIsNew: false, converged: true))
        #expect(stale.mismatches > 0)
        await server.stop()
    }
}
