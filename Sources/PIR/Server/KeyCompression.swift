/// How many Galois keys a device must send: all expansion elements, or fewer with repeated application.
public enum KeyCompression: String, Sendable, Hashable, CaseIterable {
    /// Every element `2^k + 1` the expansion uses.
    case none
    /// Only the elements up to `2^ceil((log2 N + 1)/2) + 1`.
    case maximum
    /// As `maximum`, plus one larger element to shorten the repeated applications.
    case hybrid
}
