import Foundation
import Synchronization

/// Hands out 0, 1, 2, … to concurrent workers.
final class NextIndex: Sendable {
    private let value = Atomic<Int>(0)

    /// The next index, or nil once it would reach `limit`.
    func take(below limit: Int) -> Int? {
        let i = value.wrappingAdd(1, ordering: .relaxed).oldValue
        return i < limit ? i : nil
    }
}
