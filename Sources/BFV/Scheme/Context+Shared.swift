import Synchronization

extension Context {
    /// The process's context for `parameters`: built once and handed to every caller while any of them holds it.
    /// A context's tables take megabytes (4.3 MiB at degree 4096 with three moduli) and never change, so every
    /// shard, use case and key of one parameter set shares one instead of each building its own.
    public static func shared(parameters: EncryptionParameters) throws -> Context {
        if let context = SharedContexts.table.withLock({ $0[parameters]?.context }) { return context }
        // Built outside the lock (it takes milliseconds); if another caller won the race, its context is kept.
        let built = try Context(parameters: parameters)
        return SharedContexts.table.withLock { table in
            if let context = table[parameters]?.context { return context }
            table = table.filter { $0.value.context != nil }  // forget contexts nobody holds any more
            table[parameters] = SharedContexts.Entry(context: built)
            return built
        }
    }
}

/// The table behind `Context.shared`: weak references, so a parameter set no shard uses any more frees its context.
enum SharedContexts {
    struct Entry {
        weak var context: Context?
    }

    static let table = Mutex<[EncryptionParameters: Entry]>([:])
}
