/// Polls `condition` every 10 ms for up to `seconds`; whether it came true (tests `#expect` the result).
public func eventually(seconds: Double = 10, _ condition: () -> Bool) async throws -> Bool {
    for _ in 0..<Int(seconds * 100) where !condition() { try await Task.sleep(for: .milliseconds(10)) }
    return condition()
}
