import Foundation
import LookupClient
import LookupProtocol
import PIR

extension Doctor {
    /// The `/key` body for each Galois-key compression setting (the device's real key for the setting in use, and
    /// keys for the same parameters with the other settings), so the form and the relay's limit can be matched.
    func keyBodies(device: LookupDevice, useCase: String) async -> [(compression: String, bytes: Int, current: Bool)] {
        guard let (config, hash) = await device.keyConfig(forUseCase: useCase) else { return [] }
        let degree = Int(config.encryptionParameters.polynomialDegree)
        let current = config.galoisElements.map(Int.init).sorted()
        guard degree > 0, let lowest = current.first, lowest > 1 else { return [] }
        // The expansion depth is the span from the smallest element 2^lo + 1 to log2 N.
        let depth = degree.trailingZeroBitCount - (lowest - 1).trailingZeroBitCount + 1
        var out: [(String, Int, Bool)] = []
        for compression in KeyCompression.allCases {
            var variant = config
            let elements = MulPirParameters.galoisElements(expandedCount: 1 << depth, degree: degree, compression: compression)
            variant.galoisElements = elements.map(UInt32.init)
            guard let body = try? LookupDevice.keyUpload(for: variant, hash: hash, timestamp: 1).body else { continue }
            out.append((compression.rawValue, body.count, elements == current))
        }
        return out
    }

    /// The relay's stated request limit against the exact `/key` and `/queries` requests, as the relay sees them.
    func sizeChecks(_ sizes: SessionSizes) -> [DoctorCheck] {
        let id = "size.key", title = "/key request within the stated limit"
        guard let key = sizes.exchanges.filter({ $0.path == "/key" }).max(by: { ($0.wireRequestBytes ?? $0.requestBytes) < ($1.wireRequestBytes ?? $1.requestBytes) }) else {
            return [.skipped(id, title, "no key was uploaded")]
        }
        let wire = key.wireRequestBytes ?? key.requestBytes
        guard let limit = settings.maxRequestBytes else {
            return [.pass(id, title, "\(wire) bytes encapsulated (no limit given: --max-request-bytes)")]
        }
        var checks: [DoctorCheck] = []
        if wire > limit {
            let overhead = wire - key.requestBytes
            let fitting = sizes.keyBodies.filter { $0.bytes + overhead <= limit }.min { $0.bytes < $1.bytes }
            let fix = fitting.map { "process the datasets with --key-compression \($0.compression) (about \($0.bytes + overhead) bytes encapsulated), or raise the limit with Apple" }
                ?? "no key compression fits \(limit) bytes (smallest: \(sizes.keyBodies.map { $0.bytes + overhead }.min() ?? wire)); state a larger limit"
            checks.append(.fail(id, title, "\(wire) bytes encapsulated, over the stated \(limit)", fix: fix))
        } else {
            checks.append(.pass(id, title, "\(wire) of \(limit) bytes"))
        }
        for (useCase, query) in sizes.queries {
            let wireQuery = query.wireRequestBytes ?? query.requestBytes
            let queryID = "size.queries.\(useCase.split(separator: ".").last ?? "")"
            checks.append(wireQuery > limit
                ? .fail(queryID, "/queries request within the stated limit", "\(useCase): \(wireQuery) bytes, over \(limit)",
                        fix: "fewer shards per query is not possible; state a larger limit")
                : .pass(queryID, "/queries request within the stated limit", "\(useCase): \(wireQuery) of \(limit) bytes"))
        }
        return checks
    }

    /// The numbers for Apple's form: URLs, the TXT record, and each endpoint's largest request and response as the
    /// relay sees them.
    func formLines(_ sizes: SessionSizes) -> [(String, String)] {
        var lines: [(String, String)] = [
            ("Service URL", settings.serviceURL), ("Token issuer URL", settings.issuerURL),
            ("OHTTP gateway resource", settings.gatewayURL), ("OHTTP gateway configuration resource", settings.gatewayKeysURL),
            ("DNS TXT record on the service host", "apple-live-caller-id-lookup=\(settings.bundleID)"),
            ("Test identity", "\(settings.testNumber) \"\(settings.testName)\""),
        ]
        let byPath = Dictionary(grouping: sizes.exchanges, by: \.path)
        for path in byPath.keys.sorted() {
            guard path != "/queries", let exchanges = byPath[path] else { continue }
            let request = exchanges.map { $0.wireRequestBytes ?? $0.requestBytes }.max() ?? 0
            let response = exchanges.map { $0.wireResponseBytes ?? $0.responseBytes }.max() ?? 0
            lines.append(("\(path) request / response bytes", "\(request) / \(response)"))
        }
        for (useCase, query) in sizes.queries {
            lines.append(("/queries \(useCase) request / response bytes",
                          "\(query.wireRequestBytes ?? query.requestBytes) / \(query.wireResponseBytes ?? query.responseBytes)"))
        }
        for body in sizes.keyBodies {
            lines.append(("/key body with key compression \(body.compression)", "\(body.bytes) bytes\(body.current ? " (in use)" : "")"))
        }
        return lines
    }
}
