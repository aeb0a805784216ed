import ArgumentParser
import LookupCoordinator
import LookupService
import ZeroMQ

/// `callveil keygen`: a CURVE key pair for a coordinator or a worker.
struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Generate a CURVE key pair (file mode 0600) and print its public key.")

    @Option(help: "Key file to write (an existing one is kept unless --force).")
    var output: String

    @Flag(help: "Replace an existing key file; peers that trusted its public key must be given the new one.")
    var force = false

    func run() throws {
        let keys = try CurveKeyPair.generate()
        try CurveKeyFile.write(keys, to: output, replace: force)
        print(keys.publicKey)
    }
}
