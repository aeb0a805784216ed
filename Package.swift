// swift-tools-version:6.1
// CallVeil: a scalable backend for iPhone Live Caller ID Lookup.
//
// Modules, lowest first (a module never imports one above it):
//   BFV            modular arithmetic, RNS polynomials, NTT, the BFV scheme, byte serialization
//   PIR            keyword hashing, cuckoo tables, database encoding, MulPIR server core and client
//   LookupProtocol protobuf messages of the wire protocol and conversions to engine types
// Later layers (Cluster, LookupService, the `callveil` executable) are added by their issues.
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

// The arithmetic modules are optimized even in debug builds: unoptimized SIMD and pointer loops are 10–100×
// slower, which would make the test suite (full-size conformance vectors) take far longer than it needs to.
let optimizedEvenInDebug: [SwiftSetting] = strict + [.unsafeFlags(["-O"], .when(configuration: .debug))]

let package = Package(
    name: "CallVeil",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "BFV", targets: ["BFV"]),
        .library(name: "PIR", targets: ["PIR"]),
        .library(name: "LookupProtocol", targets: ["LookupProtocol"]),
        .executable(name: "callveil", targets: ["callveil"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "BFV",
            dependencies: [.product(name: "_CryptoExtras", package: "swift-crypto")],
            swiftSettings: optimizedEvenInDebug),
        .target(
            name: "PIR",
            dependencies: ["BFV", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: optimizedEvenInDebug),
        .target(
            name: "LookupProtocol",
            dependencies: ["BFV", "PIR", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            exclude: ["proto"],
            swiftSettings: strict),
        .executableTarget(
            name: "callveil",
            dependencies: ["BFV", "PIR", "LookupProtocol",
                           .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            swiftSettings: strict),
        .executableTarget(
            name: "BFVBench",
            dependencies: ["BFV", "LookupProtocol"],
            path: "bench/BFVBench",
            swiftSettings: strict),
        .executableTarget(
            name: "PIRBench",
            dependencies: ["BFV", "PIR"],
            path: "bench/PIRBench",
            swiftSettings: strict),
        .target(
            name: "ConformanceSupport",
            dependencies: [],
            path: "Tests/ConformanceSupport",
            swiftSettings: strict),
        .testTarget(
            name: "BFVTests",
            dependencies: ["BFV", "ConformanceSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "PIRTests",
            dependencies: ["BFV", "PIR", "LookupProtocol", "ConformanceSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "LookupProtocolTests",
            dependencies: ["BFV", "LookupProtocol", "ConformanceSupport"],
            swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
