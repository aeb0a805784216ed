import Foundation
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
        let truth = LoadGenerator.Truth(present: try data.records.map { ($0.number, [$0.block ? 1 : 0], try $0.callIdentity()) },
                                        absent: [DemoDataset.absentNumber])
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
        await server.stop()
    }
}
