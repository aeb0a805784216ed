import CKernels

/// The process allocator around the PIR server's queries: its tuning, the idle release of what it keeps, the grace
/// time of a query's selector mapping and transient builds.
extension MulPirServer {
    /// Tunes the process allocator once (see `cv_tune_allocator`): queries churn through tens of megabytes of
    /// short-lived buffers, which glibc would otherwise map and fault in afresh each time.
    static let allocatorTuned: Bool = {
        cv_tune_allocator()
        return true
    }()

    /// Tunes the process allocator now (the first server does it otherwise): a service calls this at start, so the
    /// requests before the first shard loads, and a coordinator that never builds a server, get it too.
    public static func tuneAllocator() { _ = allocatorTuned }

    /// Marks allocator work starting or ending (a query, a key parse): the tuned allocator keeps freed buffers for
    /// the next request and gives them back once the process has been idle for a while (`cv_note_activity`).
    public static func noteAllocatorActivity() { cv_note_activity() }

    /// How long the process must be idle before the tuned allocator gives its kept memory back (0: never); returns
    /// the previous value.
    @discardableResult
    public static func setIdleRelease(milliseconds: Int) -> Int {
        Int(cv_set_idle_release_ms(UInt32(clamping: max(milliseconds, 0))))
    }

    /// How long the last query's selector mapping stays for the next query once no query holds one (20 ms by
    /// default; 0: unmapped at once); returns the previous value. Queries back to back reuse it instead of each
    /// faulting in and zeroing a fresh one.
    @discardableResult
    public static func setQueryMappingGrace(milliseconds: Int) -> Int {
        Int(cv_set_query_keep_ms(UInt32(clamping: max(milliseconds, 0))))
    }

    /// Idle releases done so far.
    public static var idleReleases: UInt64 { cv_idle_releases() }

    /// Bytes the malloc heap has handed out and not had back (`mallinfo2`; 0 where the C library lacks it): what the
    /// probes sample to see a request's peak in the heap.
    public static var heapInUseBytes: Int { Int(cv_heap_in_use_bytes()) }

    /// Start-up page releases done so far: the first idle release gives back the program's and its libraries'
    /// read-only pages that only starting and the first load touched (`cv_release_startup_pages`), once.
    public static var startupReleases: UInt64 { cv_startup_releases() }

    /// Runs a large transient build (a shard's file or evaluation form) with the allocator returning what it frees,
    /// then restores the tuning and trims: the tuned allocator keeps freed memory for the queries' buffers, and a
    /// build's would otherwise stay resident in the arenas of the threads that built.
    public static func transientBuild<T>(_ body: () throws -> T) rethrows -> T {
        cv_transient_begin()
        defer { cv_transient_end() }
        return try body()
    }
}
