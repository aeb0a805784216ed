import ArgumentParser

/// The `callveil` command: database tools now; the service, cluster and client commands arrive with their issues.
@main
struct CallVeil: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "callveil",
        abstract: "CallVeil: a scalable Live Caller ID Lookup backend.",
        subcommands: [ProcessDatabaseCommand.self])
}
