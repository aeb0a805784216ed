import ArgumentParser

/// The `callveil` command: the service, the dataset tools and a device-like query client.
@main
struct CallVeil: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "callveil",
        abstract: "CallVeil: a scalable Live Caller ID Lookup backend.",
        version: callveilVersion,
        subcommands: [ServeCommand.self, CoordinatorCommand.self, WorkerCommand.self, KeygenCommand.self, StoreKeyCommand.self, QueryCommand.self, CanaryCommand.self, DoctorCommand.self,
                      BuildDatabaseCommand.self, ProcessDatabaseCommand.self, DatabaseCommand.self, GenerateDemoCommand.self,
                      GatewayCommand.self, ReportsCommand.self, URLFilterCommand.self])
}
