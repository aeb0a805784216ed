// swift-tools-version:6.1
// CallVeil's coverage-guided fuzz harnesses (libFuzzer). Not part of the main build: `make fuzz` builds this package
// with `--sanitize=fuzzer --sanitize=address` and runs each harness for a set time (fuzz/run.sh, docs/operations.md).
//
// Each harness feeds outside bytes to one family of decoders, through the same entry points the service uses:
//   FuzzQueries         `/queries` bodies through LookupAPI (routing, ciphertext and inline-key decoding, PIR)
//   FuzzKeyUpload       `/key` bodies through LookupAPI (evaluation-key decoding and validation, the key store)
//   FuzzPrivacyPass     the `Authorization: PrivateToken …` header and the `/issue` body
//   FuzzClusterMessage  ClusterMessage frames into a coordinator and into a worker
//   FuzzShardFiles      LZ4 chunks (one shot and streamed), `.cvshard` files as stored and as a worker receives them,
//                       reference `.bin` shards
//   FuzzDataset         the identity CSV and text-proto readers and the keyword-database CSV reader
//   FuzzOHTTP           encapsulated requests and responses, Binary HTTP requests and responses, key-config lists
import Foundation
import PackageDescription

// A path dependency's identity is its directory's name (`main`, `callveil`, …), which products must name.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let callveil = root.lastPathComponent

func harness(_ name: String, _ products: [String]) -> Target {
    .executableTarget(
        name: name,
        dependencies: ["FuzzSupport"] + products.map { .product(name: $0, package: callveil) },
        swiftSettings: [.unsafeFlags(["-parse-as-library"])])
}

let package = Package(
    name: "CallVeilFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
    ],
    targets: [
        .target(
            name: "FuzzSupport",
            dependencies: [.product(name: "LookupService", package: callveil), .product(name: "LookupClient", package: callveil),
                           .product(name: "ServiceCore", package: callveil), .product(name: "LookupEngine", package: callveil),
                           .product(name: "Dataset", package: callveil),
                           .product(name: "LookupProtocol", package: callveil), .product(name: "PIR", package: callveil),
                           .product(name: "PrivacyPass", package: callveil),
                           .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "Logging", package: "swift-log")]),
        harness("FuzzQueries", ["LookupService", "LookupProtocol", "ServiceCore", "LookupEngine"]),
        harness("FuzzKeyUpload", ["LookupService", "LookupProtocol", "ServiceCore", "LookupEngine"]),
        harness("FuzzPrivacyPass", ["LookupService", "PrivacyPass", "ServiceCore"]),
        harness("FuzzClusterMessage", ["LookupCoordinator", "LookupWorker", "LookupEngine", "LookupStorage", "ClusterTransport", "LookupService",
                                       "ZeroMQ"]),
        harness("FuzzShardFiles", ["LZ4", "PIR", "BFV", "LookupProtocol", "LookupEngine", "ServiceCore"]),
        harness("FuzzDataset", ["LookupProtocol", "Dataset"]),
        .executableTarget(
            name: "FuzzOHTTP",
            dependencies: ["FuzzSupport", .product(name: "ObliviousHTTP", package: callveil), .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]),
    ],
    swiftLanguageModes: [.v6]
)
