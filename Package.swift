// swift-tools-version:6.1
// CallVeil: a scalable backend for iPhone Live Caller ID Lookup.
//
// Modules, lowest first (a module never imports one above it; `scripts/check-layout.py` checks it and prints the
// ladder with levels):
//   CKernels        C kernels with run-time CPU dispatch (AVX-512 or portable): 32-bit NTT, the PIR scan block
//   PrivacyPass     Privacy Pass token type 2 (blind RSA); ObliviousHTTP: Binary HTTP and Oblivious HTTP
//   BFV             modular arithmetic, RNS polynomials, NTT, the BFV scheme, byte serialization
//   ZeroMQ, LZ4     Swift wrappers over libzmq and liblz4 (system-library targets CZeroMQ, CLZ4)
//   PIR             keyword hashing, cuckoo tables, database encoding, MulPIR server core and client, shard files
//   LookupProtocol  the wire: protobuf messages and their conversions to engine types
//   Dataset         dataset input, builds, manifests, deltas, the report list's overlay; URLFilter: URL lists
//   ClusterTransport coordinator-worker transport: the cluster schema, socket loops, codec, shard transfer, placement
//   LookupEngine    shard execution, the compute pool, use cases, the key cache and store protocols, EngineError
//   LookupClient    a device-like client over HTTP (config sync, key upload, queries)
//   LookupStorage   SQLite and PostgreSQL stores; LookupWorker: the worker role (no HTTP, no SQL)
//   Reports         reports, the blocking policy and list, the Call Directory; LookupCoordinator: the coordinator role
//   ServiceCore     the service config, the listener and its guards, middleware, HTTP errors, the tracing backend
//   Gateway         the Oblivious HTTP gateway
//   LookupService   the Live Caller ID Lookup HTTP service (API, Privacy Pass, routes, LookupServer)
//   LookupDeployment the embedded cluster behind the HTTP service
//   callveil        the operator's executable; bench/: LoadGeneration and callveil-bench (the test rigs)
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

// The arithmetic modules are optimized even in debug builds: unoptimized SIMD and pointer loops are 10–100×
// slower, which would make the test suite (full-size conformance vectors) take far longer than it needs to.
let optimizedEvenInDebug: [SwiftSetting] = strict + [.unsafeFlags(["-O"], .when(configuration: .debug))]

// The external products the targets use, each named once.
let grdb: Target.Dependency = .product(name: "GRDB", package: "GRDB.swift")
let grdbSQLite: Target.Dependency = .product(name: "GRDBSQLite", package: "GRDB.swift")
let yams: Target.Dependency = .product(name: "Yams", package: "Yams")
let asyncHTTPClient: Target.Dependency = .product(name: "AsyncHTTPClient", package: "async-http-client")
let hummingbird: Target.Dependency = .product(name: "Hummingbird", package: "hummingbird")
let hummingbirdCore: Target.Dependency = .product(name: "HummingbirdCore", package: "hummingbird")
let hummingbirdHTTP2: Target.Dependency = .product(name: "HummingbirdHTTP2", package: "hummingbird")
let postgresNIO: Target.Dependency = .product(name: "PostgresNIO", package: "postgres-nio")
let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")
let deque: Target.Dependency = .product(name: "DequeModule", package: "swift-collections")
let crypto: Target.Dependency = .product(name: "Crypto", package: "swift-crypto")
let cryptoExtras: Target.Dependency = .product(name: "_CryptoExtras", package: "swift-crypto")
let httpTypes: Target.Dependency = .product(name: "HTTPTypes", package: "swift-http-types")
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")
let nioCore: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
let nioEmbedded: Target.Dependency = .product(name: "NIOEmbedded", package: "swift-nio")
let nioHTTP1: Target.Dependency = .product(name: "NIOHTTP1", package: "swift-nio")
let nioHTTPTypes: Target.Dependency = .product(name: "NIOHTTPTypes", package: "swift-nio-extras")
let nioPosix: Target.Dependency = .product(name: "NIOPosix", package: "swift-nio")
let nioSSL: Target.Dependency = .product(name: "NIOSSL", package: "swift-nio-ssl")
let prometheus: Target.Dependency = .product(name: "Prometheus", package: "swift-prometheus")
let protobuf: Target.Dependency = .product(name: "SwiftProtobuf", package: "swift-protobuf")
let serviceLifecycle: Target.Dependency = .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let unixSignals: Target.Dependency = .product(name: "UnixSignals", package: "swift-service-lifecycle")
let tracing: Target.Dependency = .product(name: "Tracing", package: "swift-distributed-tracing")
let otel: Target.Dependency = .product(name: "OTel", package: "swift-otel")

let package = Package(
    name: "CallVeil",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "BFV", targets: ["BFV"]),
        .library(name: "PIR", targets: ["PIR"]),
        .library(name: "LookupProtocol", targets: ["LookupProtocol"]),
        .library(name: "PrivacyPass", targets: ["PrivacyPass"]),
        .library(name: "ObliviousHTTP", targets: ["ObliviousHTTP"]),
        .library(name: "ZeroMQ", targets: ["ZeroMQ"]),
        .library(name: "LZ4", targets: ["LZ4"]),
        .library(name: "ClusterTransport", targets: ["ClusterTransport"]),
        .library(name: "Dataset", targets: ["Dataset"]),
        .library(name: "URLFilter", targets: ["URLFilter"]),
        .library(name: "LookupEngine", targets: ["LookupEngine"]),
        .library(name: "LookupStorage", targets: ["LookupStorage"]),
        .library(name: "Reports", targets: ["Reports"]),
        .library(name: "LookupWorker", targets: ["LookupWorker"]),
        .library(name: "ServiceCore", targets: ["ServiceCore"]),
        .library(name: "Gateway", targets: ["Gateway"]),
        .library(name: "LookupService", targets: ["LookupService"]),
        .library(name: "LookupCoordinator", targets: ["LookupCoordinator"]),
        .library(name: "LookupDeployment", targets: ["LookupDeployment"]),
        .library(name: "LookupClient", targets: ["LookupClient"]),
        .executable(name: "callveil", targets: ["callveil"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.24.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.0.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "5.0.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.29.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.0"),
        // OTLP over HTTP only: the gRPC exporter's packages are not built.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        .target(
            name: "CKernels",
            cSettings: [.unsafeFlags(["-O3"])]),
        .target(
            name: "BFV",
            dependencies: ["CKernels", crypto,
                           cryptoExtras],
            swiftSettings: optimizedEvenInDebug),
        .target(
            name: "PIR",
            dependencies: ["BFV", "CKernels", crypto],
            swiftSettings: optimizedEvenInDebug),
        .target(
            name: "LookupProtocol",
            dependencies: ["BFV", "PIR", protobuf,
                           crypto],
            exclude: ["proto"],
            swiftSettings: strict),
        .target(
            name: "Dataset",
            dependencies: ["BFV", "PIR", "LookupProtocol", protobuf,
                           crypto],
            swiftSettings: strict),
        .target(
            name: "URLFilter",
            dependencies: ["LookupProtocol", crypto,
                           protobuf],
            exclude: ["proto"],
            swiftSettings: strict),
        .target(
            name: "PrivacyPass",
            dependencies: [crypto,
                           cryptoExtras],
            swiftSettings: strict),
        .target(
            name: "ObliviousHTTP",
            dependencies: [crypto],
            swiftSettings: strict),
        .systemLibrary(name: "CZeroMQ", path: "Sources/CZeroMQ", providers: [.apt(["libzmq3-dev"])]),
        .systemLibrary(name: "CLZ4", path: "Sources/CLZ4", providers: [.apt(["liblz4-dev"])]),
        .target(name: "ZeroMQ", dependencies: ["CZeroMQ"], swiftSettings: strict),
        .target(name: "LZ4", dependencies: ["CLZ4"], swiftSettings: strict),
        .target(
            name: "ClusterTransport",
            dependencies: ["LookupProtocol", "ZeroMQ", "LZ4", crypto, protobuf],
            exclude: ["proto"],
            swiftSettings: strict),
        .systemLibrary(
            name: "CZlib",
            path: "Sources/CZlib",
            providers: [.apt(["zlib1g-dev"])]),
        .target(
            name: "LookupEngine",
            dependencies: ["BFV", "PIR", "LookupProtocol", "Dataset", deque, prometheus, protobuf, tracing],
            swiftSettings: strict),
        .target(
            name: "LookupStorage",
            dependencies: ["LookupEngine", "LookupProtocol",
                           grdb,
                           postgresNIO,
                           nioSSL,
                           nioCore,
                           logging,
                           crypto],
            swiftSettings: strict),
        .target(
            name: "Reports",
            dependencies: ["LookupEngine", "LookupStorage", "LookupProtocol", "Dataset", nioCore, grdb, postgresNIO,
                           crypto],
            swiftSettings: strict),
        .target(
            name: "LookupWorker",
            dependencies: ["BFV", "PIR", "LookupProtocol", "LookupEngine", "ClusterTransport", "ZeroMQ", logging, tracing],
            swiftSettings: strict),
        .target(
            name: "ServiceCore",
            dependencies: ["CKernels", "BFV", "PIR", "LookupProtocol", "LookupEngine", "LookupStorage", "Reports", "ObliviousHTTP",
                           hummingbird,
                           hummingbirdCore,
                           hummingbirdHTTP2,
                           nioHTTPTypes,
                           httpTypes,
                           nioCore,
                           nioHTTP1,
                           nioSSL,
                           logging,
                           serviceLifecycle,
                           protobuf,
                           tracing,
                           otel],
            swiftSettings: strict),
        .target(
            name: "Gateway",
            dependencies: ["ServiceCore", "LookupEngine", "LookupStorage", "ObliviousHTTP", asyncHTTPClient,
                           hummingbird, hummingbirdCore, httpTypes, nioCore, nioHTTP1, deque, logging,
                           serviceLifecycle, crypto, tracing],
            swiftSettings: strict),
        .target(
            name: "LookupService",
            dependencies: ["BFV", "PIR", "LookupProtocol", "URLFilter", "LookupEngine", "LookupStorage", "Reports",
                           "ServiceCore", "Gateway", "PrivacyPass", "CZlib", hummingbird, hummingbirdCore,
                           "ObliviousHTTP", deque, httpTypes, nioCore, logging, serviceLifecycle, unixSignals,
                           protobuf, tracing],
            swiftSettings: strict),
        .target(
            name: "LookupCoordinator",
            dependencies: ["PIR", "LookupProtocol", "LookupEngine", "LookupStorage", "LookupWorker",
                           "ClusterTransport", "ZeroMQ", yams, postgresNIO, logging],
            swiftSettings: strict),
        .target(
            name: "LookupDeployment",
            dependencies: ["LookupEngine", "LookupStorage", "LookupService", "LookupCoordinator", "LookupWorker",
                           "ZeroMQ", logging, tracing],
            swiftSettings: strict),
        .target(
            name: "LookupClient",
            dependencies: ["BFV", "PIR", "LookupProtocol", "PrivacyPass", "ObliviousHTTP", asyncHTTPClient, nioCore, nioHTTP1,
                           crypto],
            swiftSettings: strict),
        .target(
            name: "Onboarding",
            dependencies: ["LookupClient", "LookupProtocol", "ObliviousHTTP", "Dataset", "PIR", "URLFilter", asyncHTTPClient, nioCore,
                           nioPosix,
                           nioSSL, .product(name: "NIOTLS", package: "swift-nio")],
            swiftSettings: strict),
        .executableTarget(
            name: "callveil",
            dependencies: ["BFV", "PIR", "LookupProtocol", "Dataset", "URLFilter", "LookupEngine", "LookupStorage",
                           "Reports", "LookupWorker", "ServiceCore", "Gateway", "LookupService", "LookupCoordinator", "ClusterTransport",
                           "LookupDeployment", "LookupClient", "ZeroMQ", logging, serviceLifecycle, unixSignals,
                           hummingbird, argumentParser, asyncHTTPClient, nioSSL, nioCore, "Onboarding"],
            swiftSettings: strict),
        .target(
            name: "LoadGeneration",
            dependencies: ["PIR", "LookupProtocol", "Dataset", "LookupClient", hummingbird, serviceLifecycle, logging],
            path: "bench/LoadGeneration",
            swiftSettings: strict),
        .executableTarget(
            name: "callveil-bench",
            dependencies: ["BFV", "PIR", "LookupProtocol", "Dataset", "ServiceCore", "LookupService",
                           "LookupDeployment", "LookupWorker", "LookupCoordinator", "LookupClient", "LoadGeneration",
                           "ObliviousHTTP", "ZeroMQ", asyncHTTPClient, hummingbird, serviceLifecycle, nioCore,
                           nioSSL, logging, argumentParser, crypto],
            path: "bench/CallVeilBench",
            swiftSettings: strict),
        .executableTarget(
            name: "BFVBench",
            dependencies: ["BFV", "LookupProtocol", protobuf],
            path: "bench/BFVBench",
            swiftSettings: strict),
        .executableTarget(
            name: "ClusterBench",
            dependencies: ["BFV", "PIR", "LookupProtocol", "Dataset", "LookupEngine", "LookupStorage", "LookupWorker", "LookupCoordinator",
                           "ClusterTransport", "ZeroMQ", "LZ4", logging],
            path: "bench/ClusterBench",
            swiftSettings: strict),
        .executableTarget(
            name: "PIRBench",
            dependencies: ["BFV", "PIR", "LookupProtocol"],
            path: "bench/PIRBench",
            swiftSettings: strict),
        .target(
            name: "ConformanceSupport",
            dependencies: ["PIR", "LookupProtocol"],
            path: "Tests/ConformanceSupport",
            swiftSettings: strict),
        .testTarget(
            name: "BFVTests",
            dependencies: ["BFV", "CKernels", "ConformanceSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "PIRTests",
            dependencies: ["BFV", "CKernels", "PIR", "LookupProtocol", "ConformanceSupport", protobuf],
            swiftSettings: strict),
        .target(
            name: "ServiceTestSupport",
            dependencies: ["LookupProtocol", "Dataset", "LookupEngine", "LookupStorage", "ServiceCore", "LookupService", "LookupClient", "PIR",
                           "LoadGeneration",
                           hummingbird,
                           serviceLifecycle,
                           logging,
                           postgresNIO,
                           crypto],
            path: "Tests/ServiceTestSupport",
            swiftSettings: strict),
        .testTarget(
            name: "LookupServiceTests",
            dependencies: ["BFV", "PIR", "LookupProtocol", "Dataset", "URLFilter", "LookupEngine", "LookupStorage",
                           "Reports", "ServiceCore", "Gateway", "LookupService", "LookupCoordinator",
                           "LookupDeployment", "LookupClient", "ConformanceSupport", "ObliviousHTTP", "PrivacyPass",
                           "ServiceTestSupport", "LoadGeneration", "Onboarding", hummingbird, grdb, grdbSQLite, serviceLifecycle, protobuf,
                           logging, postgresNIO, nioEmbedded, crypto],
            swiftSettings: strict),
        .testTarget(
            name: "LookupClusterTests",
            dependencies: ["PIR", "LookupProtocol", "Dataset", "LookupEngine", "LookupStorage", "LookupWorker",
                           "ServiceCore", "LookupService", "LookupCoordinator", "LookupDeployment", "LookupClient",
                           "ClusterTransport", "ZeroMQ", "ServiceTestSupport", "LoadGeneration", "ConformanceSupport", postgresNIO],
            swiftSettings: strict),
        .testTarget(
            name: "TransportTests",
            dependencies: ["ZeroMQ", "LZ4", "ClusterTransport", "ConformanceSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "ObliviousHTTPTests",
            dependencies: ["ObliviousHTTP", crypto],
            swiftSettings: strict),
        .testTarget(
            name: "PrivacyPassTests",
            dependencies: ["PrivacyPass", "ConformanceSupport", crypto],
            swiftSettings: strict),
        .testTarget(
            name: "LookupProtocolTests",
            dependencies: ["BFV", "PIR", "LookupProtocol", "Dataset", "URLFilter", "ConformanceSupport",
                           protobuf],
            swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
