import ArgumentParser
import Foundation
import LookupProtocol
import URLFilter

/// `callveil url-filter build`: a URL list to the URL-filter use case's keyword database and Bloom prefilter.
struct URLFilterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "url-filter",
        abstract: "Build the URL-filter use case's database and Bloom prefilter from a URL list.",
        subcommands: [Build.self])

    struct Build: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Normalize a URL list; write urls.binpb (keyword database, value 1), prefilter.bin and prefilter.json.",
            discussion: """
                One URL per line (# comments). URLs are normalized as NEURLFilterManager matches them by default: no scheme, \
                no www., lower case, host Punycoded. Then: callveil process-db --input OUT/urls.binpb --output DIR, and serve \
                DIR as the use case <app bundle id>.url.filtering; the prefilter is served from urlFilter.prefilterDirectory.
                """)
        @Option(help: "The URL list.") var input: String
        @Option(help: "Output folder.") var output: String
        @Option(help: "The prefilter's false-positive rate.") var falsePositiveRate = 0.001
        @Option(help: "MurmurHash3 seed of the prefilter.") var murmurSeed: UInt32 = BloomPrefilter.defaultMurmurSeed

        func run() throws {
            let list = try URLFilterList(text: try String(contentsOfFile: input, encoding: .utf8))
            let info = try list.write(to: output, falsePositiveRate: falsePositiveRate, murmurSeed: murmurSeed)
            print("\(info.itemCount) URLs; prefilter \(info.byteCount) bytes, \(info.bitCount) bits, \(info.hashCount) hashes, seed \(info.murmurSeed), "
                  + "predicted false-positive rate \(String(format: "%.5f", info.predictedFalsePositiveRate)); tag \(info.tag)")
        }
    }
}
