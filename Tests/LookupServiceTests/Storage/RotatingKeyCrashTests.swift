import Foundation
import Gateway
import LookupStorage
import ObliviousHTTP
import ServiceTestSupport
import Testing

/// A key ring's save in its key directory, failed at each step: the key file, the manifest, and the deletion of
/// files the manifest no longer lists. Each leaves the previous keys serving after a restart, and the next save
/// works and stores the keys the ring then holds.
@Suite("Rotating keys: failures while saving")
struct RotatingKeyCrashTests {
    static let day = ManualClock.day

    /// A gateway ring with its first key, the clock moved to when a successor is due, and the successor's file name.
    static func dueRing() throws -> (ring: GatewayKeyRing, directory: String, time: ManualClock, first: UInt8, successorFile: String) {
        let time = ManualClock()
        let directory = try temporaryDirectory() + "/gateway-keys"
        let ring = try GatewayKeyRing(directory: directory, lifetime: 10 * day, overlap: 2 * day, clock: time.read)
        #expect(try ring.ensure())
        let first = try #require(ring.entries.first).key.keyID
        time.set(days: 8.5)
        let successor = [first &+ 1].map { String(format: "%02x", $0) }.joined()
        return (ring, directory, time, first, "gateway-\(successor)-\(Int(time.now.timeIntervalSince1970)).x25519")
    }

    /// An obstacle that makes writing `file` in `directory` fail even for root: a directory where the save puts its
    /// temporary file.
    static func block(_ file: String, in directory: String) throws -> String {
        let obstacle = "\(directory)/\(file).tmp-\(getpid())"
        try FileManager.default.createDirectory(atPath: obstacle, withIntermediateDirectories: false)
        return obstacle
    }

    /// The key ids a fresh process loads from `directory`.
    static func reopened(_ directory: String, _ time: ManualClock) throws -> [UInt8] {
        try GatewayKeyRing(directory: directory, lifetime: 10 * day, overlap: 2 * day, clock: time.read).entries.map(\.key.keyID)
    }

    @Test("Failing to write the successor's key file: the ring and a restart keep the old key; the next save works")
    func keyFileFails() throws {
        let (ring, directory, time, first, successorFile) = try Self.dueRing()
        let obstacle = try Self.block(successorFile, in: directory)
        #expect(throws: (any Error).self) { try ring.ensure() }
        #expect(ring.entries.map(\.key.keyID) == [first])
        #expect(try Self.reopened(directory, time) == [first])
        try FileManager.default.removeItem(atPath: obstacle)
        #expect(try ring.ensure())
        #expect(try Self.reopened(directory, time) == [first, first &+ 1])
    }

    @Test("Failing to write the manifest after the key file: a restart keeps the old key; the retry stores the key it serves")
    func manifestFails() throws {
        let (ring, directory, time, first, successorFile) = try Self.dueRing()
        let obstacle = try Self.block("keys.json", in: directory)
        #expect(throws: (any Error).self) { try ring.ensure() }
        #expect(FileManager.default.fileExists(atPath: "\(directory)/\(successorFile)"))  // written, listed nowhere
        #expect(ring.entries.map(\.key.keyID) == [first])
        #expect(try Self.reopened(directory, time) == [first])
        try FileManager.default.removeItem(atPath: obstacle)
        // The retry makes a new successor with the same id and start, so the same file name: the file must hold
        // the key the ring now serves, or a restart would load another key than clients were given.
        #expect(try ring.ensure())
        let restarted = try GatewayKeyRing(directory: directory, lifetime: 10 * Self.day, overlap: 2 * Self.day, clock: time.read)
        #expect(restarted.publishedConfigs == ring.publishedConfigs)
        let request = try OHTTPClientRequest(try BinaryHTTPRequest(method: "GET", path: "/").encoded(),
                                             config: try #require(try OHTTPKeyConfig.decodeList(ring.publishedConfigs).first))
        #expect(throws: Never.self) { try restarted.gateway?.decapsulate(request.encapsulated) }
    }

    @Test("Stopped after the manifest, before deleting the dropped key's file: the new keys load; the next save deletes it")
    func strayFileAfterManifest() throws {
        let (ring, directory, time, first, _) = try Self.dueRing()
        #expect(try ring.ensure())
        let files = { try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".x25519") }.sorted() }
        let before = try files()
        let stray = try #require(before.first { $0.contains(String(format: "-%02x-", first)) })
        let strayBytes = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(stray)"))
        time.set(days: 10.5)
        #expect(try ring.ensure())  // drops the first key
        try strayBytes.write(to: URL(fileURLWithPath: "\(directory)/\(stray)"))  // as if stopped before the deletion
        #expect(try Self.reopened(directory, time) == [first &+ 1])
        try ring.rotate()
        #expect(try !files().contains(stray))
        #expect(try Self.reopened(directory, time) == ring.entries.map(\.key.keyID))
    }
}
