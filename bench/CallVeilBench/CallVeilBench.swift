import ArgumentParser

/// `callveil-bench`: the test rigs, apart from the operator's `callveil`: the load harness, the overload and
/// hostile-client run with its checked phone, and the probes (token race, gateway hop, parsed-key memory, the heap after key uploads).
@main
struct CallVeilBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "callveil-bench",
        abstract: "CallVeil's load, overload and probe tools (not needed to run the service).",
        subcommands: [BenchCommand.self, OverloadCommand.self, OverloadPhoneCommand.self, TokenRaceCommand.self, GatewayBenchCommand.self,
                      KeyMemoryCommand.self, WorkloadCommand.self, TraceCollectCommand.self, AllocatorReleaseCommand.self,
                      UploadMemoryCommand.self])
}
