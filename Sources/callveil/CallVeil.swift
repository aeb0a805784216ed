import ArgumentParser
import PIR

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

    /// The long-running roles tune the allocator here, on the main thread before any other thread has allocated:
    /// glibc gives each thread that allocates before the tuning an arena of its own, whose free top no release
    /// reaches (`cv_tune_allocator`).
    static func main() async {
        let roles = ([ServeCommand.self, CoordinatorCommand.self, WorkerCommand.self] as [any ParsableCommand.Type]).compactMap { $0.configuration.commandName }
        if let role = CommandLine.arguments.dropFirst().first, roles.contains(role) {
            MulPirServer.tuneAllocator()
        }
        await main(nil)
    }
}
