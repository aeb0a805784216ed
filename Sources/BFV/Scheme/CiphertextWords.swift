/// A ciphertext's 32-bit words held somewhere contiguous (an array slice, or a buffer another layer owns), so
/// the engine's word kernels can read them in place instead of from a copy.
package protocol CiphertextWords {
    /// Words held.
    var wordCount: Int { get }
    /// Calls `body` with the words.
    func withWords<R>(_ body: (UnsafeBufferPointer<UInt32>) throws -> R) rethrows -> R
}

extension ArraySlice: CiphertextWords where Element == UInt32 {
    package var wordCount: Int { count }

    package func withWords<R>(_ body: (UnsafeBufferPointer<UInt32>) throws -> R) rethrows -> R {
        try withUnsafeBufferPointer(body)
    }
}
