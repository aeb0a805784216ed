import ArgumentParser
import LookupService
import LookupStorage

/// `callveil store-key`: a new key-encryption key for the shared store (every coordinator needs the same file).
struct StoreKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store-key",
        abstract: "Write a new key-encryption key (64 hex digits, mode 0600) that seals evaluation keys in the shared store.",
        discussion: "Copy the same file to every coordinator; losing it makes the stored keys unreadable (devices upload again).")

    @Option(help: "File to create (never overwritten).")
    var output: String

    func run() throws {
        try StoreSealing.generate(path: output)
    }
}
