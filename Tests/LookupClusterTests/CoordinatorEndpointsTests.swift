import LookupCoordinator
import LookupWorker
import Testing

/// A worker's coordinators from its command line: addresses and in-process endpoints kept, names with several
/// addresses expanded to one coordinator each, duplicates dropped, each keeping its CURVE key.
@Suite("Coordinator endpoints")
struct CoordinatorEndpointsTests {
    @Test("Addresses and inproc endpoints are kept as given, with their keys; duplicates go")
    func literalsKept() {
        let given: [(endpoint: String, serverKey: String?)] = [
            ("tcp://10.0.0.1:5555", "k1"), ("tcp://[fd00::2]:5555", "k2"), ("inproc://callveil", nil), ("tcp://10.0.0.1:5555", "k1"),
        ]
        let expanded = CoordinatorEndpoints.expand(given)
        #expect(expanded.map(\.endpoint) == ["tcp://10.0.0.1:5555", "tcp://[fd00::2]:5555", "inproc://callveil"])
        #expect(expanded.map(\.serverKey) == ["k1", "k2", nil])
    }

    @Test("A name stands for one coordinator per address it resolves to, each with the name's key")
    func namesExpanded() {
        let expanded = CoordinatorEndpoints.expand([(endpoint: "tcp://localhost:5555", serverKey: "k")])
        // localhost resolves to 127.0.0.1 and, where IPv6 is configured, ::1: one address keeps the name (ZeroMQ
        // resolves it again on reconnect), two become two coordinators.
        #expect(!expanded.isEmpty)
        if expanded.count == 1 {
            #expect(expanded[0].endpoint == "tcp://localhost:5555")
        } else {
            #expect(Set(expanded.map(\.endpoint)).isSubset(of: ["tcp://127.0.0.1:5555", "tcp://[::1]:5555"]))
            #expect(expanded.count == 2)
        }
        #expect(expanded.allSatisfy { $0.serverKey == "k" })
        // A name that does not resolve is kept (ZeroMQ keeps trying it).
        #expect(CoordinatorEndpoints.expand([(endpoint: "tcp://no-such-host.invalid:5555", serverKey: nil)]).map(\.endpoint)
            == ["tcp://no-such-host.invalid:5555"])
    }
}
