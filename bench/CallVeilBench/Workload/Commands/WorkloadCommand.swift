import ArgumentParser
import Foundation

/// `callveil-bench workload`: a replayable population of phones (prepare, upload, replay, check).
struct WorkloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "workload",
        abstract: "Prepare a population of phones, upload their keys, replay their calls and check every answer.",
        subcommands: [WorkloadPrepareCommand.self, WorkloadUploadCommand.self, WorkloadReplayCommand.self, WorkloadCheckCommand.self,
                       WorkloadKeyFloodCommand.self])
}
