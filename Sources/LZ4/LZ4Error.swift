import CLZ4

/// An LZ4 frame failure.
public struct LZ4Error: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let description: String

    init(_ code: Int) {
        description = String(cString: LZ4F_getErrorName(code))
    }

    init(message: String) {
        description = message
    }
}
