import ArgumentParser
import Foundation
import PIR

/// `callveil-bench allocator-release`: tunes the allocator as the service does, allocates and frees `--megabytes` in
/// query-sized blocks, and prints, as JSON, this process's RSS before, right after the free (the tuned allocator keeps
/// it) and once idle (the release thread gives it back). A process of its own, so nothing else moves the RSS.
struct AllocatorReleaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "allocator-release",
        abstract: "Measure what the tuned allocator keeps after a burst and gives back once idle (JSON).",
        shouldDisplay: false)

    @Option(help: "Megabytes to allocate, touch and free.") var megabytes = 128
    @Option(help: "Idle time before a release, in milliseconds (0: never release).") var idleMilliseconds = 200
    @Option(help: "Longest wait for the release, in seconds.") var wait = 5.0

    func run() throws {
        MulPirServer.tuneAllocator()
        MulPirServer.setIdleRelease(milliseconds: idleMilliseconds)
        let before = PeakSampler.rss(getpid()) ?? 0
        let block = 512 << 10
        MulPirServer.noteAllocatorActivity()
        var blocks: [UnsafeMutableRawPointer] = []
        for _ in 0..<(megabytes << 20) / block {
            guard let p = malloc(block) else { throw ValidationError("malloc failed") }
            memset(p, 1, block)
            blocks.append(p)
        }
        let peak = PeakSampler.rss(getpid()) ?? 0
        blocks.forEach { free($0) }
        MulPirServer.noteAllocatorActivity()
        let kept = PeakSampler.rss(getpid()) ?? 0
        let releases = MulPirServer.idleReleases
        let end = Date().addingTimeInterval(wait)
        while MulPirServer.idleReleases == releases, Date() < end { usleep(20_000) }
        let idle = PeakSampler.rss(getpid()) ?? 0
        print("{\"before\":\(before),\"peak\":\(peak),\"kept\":\(kept),\"idle\":\(idle),\"releases\":\(MulPirServer.idleReleases - releases)}")
    }
}
