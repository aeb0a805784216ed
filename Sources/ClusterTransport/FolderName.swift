/// A name from configuration or from a cluster member (a use case's, a coordinator's) made one folder name: letters,
/// digits, `.` and `-` kept, anything else `_`, and a name of dots only (or none) prefixed with `_`, so it never
/// names its parent folder or leaves it.
public enum FolderName {
    /// `name` as one safe folder name.
    public static func safe(_ name: String) -> String {
        let safe = String(name.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" ? $0 : "_" })
        return safe.allSatisfy { $0 == "." } ? "_" + safe : safe
    }
}
