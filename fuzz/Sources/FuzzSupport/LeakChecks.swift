/// LeakSanitizer's switches (compiler-rt's public sanitizer interface). Objects the calling thread allocates while
/// checks are off are never reported: the harnesses build their long-lived fixture so. Work the fixture hands to
/// other threads (shard loading on the compute pool) is not covered; `lsan.supp` lists the false positives left,
/// with their reasons.
@_silgen_name("__lsan_disable") private func lsanDisable()
@_silgen_name("__lsan_enable") private func lsanEnable()

/// Runs `body` (fixture set-up) with leak checks off for what this thread allocates.
public func withoutLeakChecks<T>(_ body: () throws -> T) rethrows -> T {
    lsanDisable()
    defer { lsanEnable() }
    return try body()
}
