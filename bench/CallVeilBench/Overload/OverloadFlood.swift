import AsyncHTTPClient
import Foundation
import LookupClient
import Synchronization

/// The hostile sources of the overload run, each on its own HTTP connection pool so none queues behind another
/// in the client: valid `/queries` offered open-loop at a fixed rate, and `/key` uploads of `uploadBytes` each
/// from a new User-Identifier every time (a real evaluation key padded with an unknown field).
enum OverloadFlood {
    /// Valid queries at `rate` per second from `devices`, whatever the server answers; at most `maxOutstanding`
    /// in flight (beyond, arrivals are counted as not sent).
    static func queries(devices: [LookupDevice], bodies: [[UInt8]], rate: Double, maxOutstanding: Int, tally: StatusTally,
                        stop: @escaping @Sendable () -> Bool) async {
        let outstanding = InFlight()
        let interval = 1.0 / rate
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            var n = 0
            while !stop() {
                let due = start + .milliseconds(Int64(Double(n) * interval * 1000))
                if due > .now { try? await Task.sleep(until: due) }
                let i = n % devices.count
                n += 1
                guard outstanding.enter(limit: maxOutstanding) else {
                    tally.add("not sent (client cap)")
                    continue
                }
                let device = devices[i], body = bodies[i]
                group.addTask {
                    do {
                        _ = try await device.post("/queries", body: body)
                        tally.add(error: nil)
                    } catch is CancellationError {
                        tally.add("cancelled at the flood's end")
                    } catch {
                        tally.add(error: Task.isCancelled ? CancellationError() : error)
                    }
                    outstanding.leave()
                }
            }
            // The flood ends now: requests still queued in the client are dropped, not sent late.
            group.cancelAll()
            await group.waitForAll()
        }
    }

    /// `/key` uploads of `uploadBytes` from `concurrency` uploaders at once, each from a new User-Identifier.
    static func keys(http: LookupHTTPClient, userToken: String, keyBody: [UInt8], uploadBytes: Int, concurrency: Int,
                     tally: StatusTally, stop: @escaping @Sendable () -> Bool) async {
        let body = padded(keyBody, to: uploadBytes)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    let tokens = PrivacyPassAuthorization(issuer: http, userToken: userToken, batch: 4)
                    while !stop() {
                        do {
                            guard let authorization = try await tokens.authorization() else { return }
                            let headers = [("User-Identifier", UUID().uuidString), ("User-Agent", "com.apple.ciphermld/1.0 iOS/18.2 flood"),
                                           ("Authorization", authorization)]
                            let (status, answerHeaders, answer) = try await http.exchange(path: "/key", headers: headers, body: body)
                            tally.add(error: status == 200 ? nil : LookupClientError.answer(status: status, headers: answerHeaders, body: answer))
                        } catch {
                            tally.add(error: error)
                            try? await Task.sleep(for: .milliseconds(100))
                        }
                    }
                }
            }
        }
    }

    /// `body` (a serialized `EvaluationKeys`) with an unknown length-delimited field (number 15) appended so the
    /// whole is `size` bytes: it still parses, so the server reads, decodes and validates every byte.
    static func padded(_ body: [UInt8], to size: Int) -> [UInt8] {
        var out = body
        let room = size - body.count - 1 - 5
        guard room > 0 else { return out }
        out.append(15 << 3 | 2)
        var length = UInt64(room)
        var varint: [UInt8] = []
        repeat {
            varint.append(UInt8(length & 0x7F) | (length >= 0x80 ? 0x80 : 0))
            length >>= 7
        } while length > 0
        out += varint
        out += [UInt8](repeating: 0x5A, count: room)
        return out
    }
}

/// Requests in flight, bounded.
private final class InFlight: Sendable {
    private let count = Mutex(0)

    /// Counts one more unless `limit` are in flight.
    func enter(limit: Int) -> Bool {
        count.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func leave() { count.withLock { $0 -= 1 } }
}
