/// Bounds a decoder enforces before it allocates: a message is checked against them, never trusted to be sane.
public struct BinaryHTTPLimits: Sendable {
    /// Fields in one section.
    public var maxFields = 128
    /// Bytes of one field (name and value together).
    public var maxFieldBytes = 16 << 10
    /// Bytes of one field section.
    public var maxSectionBytes = 64 << 10
    /// Bytes of the content.
    public var maxContentBytes = 16 << 20
    /// Informational (1xx) responses before the final one.
    public var maxInformational = 8

    /// The defaults: room for Live Caller ID Lookup's largest bodies (evaluation keys of a few MB).
    public init() {}
}
