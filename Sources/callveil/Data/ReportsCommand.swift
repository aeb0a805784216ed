import ArgumentParser
import Dataset
import Foundation
import Logging
import LookupProtocol
import LookupService
import Reports
import ServiceCore

/// `callveil reports`: the operator's side of junk reports: list and aggregate them, export them, record manual
/// decisions, publish the next blocking list and bring the block database to it, import the identification list.
struct ReportsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reports",
        abstract: "Inspect junk reports, decide on numbers, and publish the blocking and identification lists.",
        subcommands: [List.self, Aggregate.self, Export.self, Decide.self, Publish.self, Identification.self])

    struct Common: ParsableArguments {
        @Option(help: "The service config (its reports store: SQLite file or shared PostgreSQL).")
        var config: String

        func withStore<T: Sendable>(_ body: (any ReportStore, ServiceConfig) async throws -> T) async throws -> T {
            let loaded = try ServiceConfig.load(path: config)
            let (store, shared) = try await loaded.openReportStore(logger: Logger(label: "callveil.reports"))
            do {
                let result = try await body(store, loaded)
                await shared?.shutdown()
                return result
            } catch {
                await shared?.shutdown()
                throw error
            }
        }
    }

    static func date(_ t: Double) -> String { ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: t)) }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Reports, newest first (notes are shown; they are never logged).")
        @OptionGroup var common: Common
        @Option(help: "Only this number (E.164).") var number: String?
        @Option(help: "At most this many.") var limit = 100

        func run() async throws {
            try await common.withStore { store, _ in
                for r in try await store.reports(number: number, limit: limit) {
                    print("\(r.number)  \(r.verdict.rawValue)  \(r.channel.rawValue)  reporter \(r.reporter.prefix(8))…  \(ReportsCommand.date(r.receivedAt))"
                          + (r.category.map { "  [\($0)]" } ?? "") + (r.note.map { "  \"\($0)\"" } ?? ""))
                }
            }
        }
    }

    struct Aggregate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Per number: junk and not-junk reporters, first and last report.")
        @OptionGroup var common: Common
        @Option(help: "Only numbers with at least this many reporters.") var minReporters = 1
        @Option(help: "At most this many numbers.") var limit = 100

        func run() async throws {
            try await common.withStore { store, _ in
                print("number            junk  not-junk  reporters  first seen            last seen")
                for a in try await store.aggregates(minReporters: minReporters, limit: limit) {
                    print("\(a.number.padding(toLength: 16, withPad: " ", startingAt: 0))  \(String(format: "%4d  %8d  %9d", a.junk, a.notJunk, a.reporters))  \(ReportsCommand.date(a.firstSeen))  \(ReportsCommand.date(a.lastSeen))")
                }
            }
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Reports, aggregates, decisions or URL reports as JSON lines on standard output.")
        @OptionGroup var common: Common
        @Option(help: "reports, aggregates, decisions, urls or blocking.") var what = "aggregates"
        @Option(help: "At most this many rows.") var limit = 1_000_000

        func run() async throws {
            try await common.withStore { store, _ in
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                func emit<T: Encodable>(_ rows: [T]) throws { for row in rows { print(String(decoding: try encoder.encode(row), as: UTF8.self)) } }
                switch what {
                case "reports": try emit(try await store.reports(number: nil, limit: limit))
                case "aggregates": try emit(try await store.aggregates(minReporters: 1, limit: limit))
                case "decisions": try emit(try await store.decisions())
                case "urls": try emit(try await store.urlAggregates(limit: limit))
                case "blocking": try emit(try await store.entries(.blocking, version: try await store.currentVersion(.blocking)))
                default: throw ValidationError("--what must be reports, aggregates, decisions, urls or blocking")
                }
            }
        }
    }

    struct Decide: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Confirm (always block) or reject (never block from reports) a number, or clear the decision.")
        @OptionGroup var common: Common
        @Option(help: "The number (E.164).") var number: String
        @Option(help: "confirm, reject or clear.") var action: String
        @Option(help: "Why (kept as the block decision's reason).") var note = ""

        func run() async throws {
            guard let e164 = IdentityDataset.normalize(number), DirectoryEntry.phoneNumber(e164: e164) != nil else {
                throw ValidationError("\(number) is not an E.164 number")
            }
            let decision: ManualDecision.Action?
            switch action {
            case "clear": decision = nil
            default:
                guard let parsed = ManualDecision.Action(rawValue: action) else { throw ValidationError("--action must be confirm, reject or clear") }
                decision = parsed
            }
            try await common.withStore { store, _ in
                try await store.decide(number: e164, action: decision, note: note, at: Date().timeIntervalSince1970)
            }
            print("\(e164): \(action)")
        }
    }

    struct Publish: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Publish the blocking list the policy calls for, and bring a block database to it.",
            discussion: """
                Applies reports.policy to the reports and decisions, publishes the next blocking-list version when anything \
                changed (the Call Directory feed serves it at once), then, with --manifest, lays that list over the block \
                database: listed numbers answer blocked, numbers that left the list get their curated value back (the \
                provider's own blocks are never undone), in one atomic version. Send the service SIGHUP (or let its reload \
                pick the new version up) to serve it.
                """)
        @OptionGroup var common: Common
        @Option(help: "The block database's manifest to update.") var manifest: String?
        @Option(help: "Threads for the database update.") var threads = ProcessInfo.processInfo.activeProcessorCount

        func run() async throws {
            try await common.withStore { store, config in
                let publisher = BlockListPublisher(store: store, policy: config.reports?.policy ?? ReportPolicy())
                let publication = try await publisher.publish()
                print("blocking list: version \(publication.version), \(publication.additions.count) added, \(publication.removals.count) removed")
                if let manifest {
                    let update = try await publisher.update(manifest: manifest, threads: threads)
                    print("block database: list version \(update.from) → \(update.to), \(update.blocked) blocked, \(update.unblocked) unblocked")
                }
            }
        }
    }

    struct Identification: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Publish the identification list of the Call Directory feed from a CSV of number,label.")
        @OptionGroup var common: Common
        @Option(help: "CSV lines `number,label` (label at most 64 characters).") var file: String

        func run() async throws {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            var entries: [DirectoryEntry] = []
            for (i, line) in text.split(whereSeparator: \.isNewline).enumerated() {
                let fields = line.split(separator: ",", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                if i == 0, fields.first == "number" { continue }
                guard fields.count == 2, let e164 = IdentityDataset.normalize(fields[0]), let number = DirectoryEntry.phoneNumber(e164: e164),
                      !fields[1].isEmpty, fields[1].count <= 64 else {
                    throw ValidationError("\(file):\(i + 1): expected number,label (E.164, label 1 to 64 characters)")
                }
                entries.append(DirectoryEntry(number: number, label: fields[1], reason: "import \(URL(fileURLWithPath: file).lastPathComponent)"))
            }
            try await common.withStore { store, _ in
                let publication = try await store.publish(.identification, entries: entries, at: Date().timeIntervalSince1970)
                print("identification list: version \(publication.version), \(publication.additions.count) added, \(publication.removals.count) removed")
            }
        }
    }
}
