/// Where shards live: every shard on `replication` distinct live workers (fewer if there are fewer workers),
/// keeping current copies where possible, then moving copies from the most to the least loaded worker until
/// loads differ by at most one.
public enum ShardPlacement {
    /// The target holders of each shard.
    public static func plan<Shard: Hashable & Comparable>(shards: [Shard], workers: [String], current: [Shard: Set<String>],
                                                        replication: Int) -> [Shard: Set<String>] {
        guard !workers.isEmpty else { return [:] }
        let live = Set(workers)
        let copies = min(max(replication, 1), workers.count)
        var target: [Shard: Set<String>] = [:]
        var load: [String: Int] = Dictionary(uniqueKeysWithValues: workers.map { ($0, 0) })
        for shard in shards.sorted() {
            let kept = Array((current[shard] ?? []).intersection(live)).sorted().prefix(copies)
            target[shard] = Set(kept)
            for w in kept { load[w, default: 0] += 1 }
        }
        for shard in shards.sorted() {
            while target[shard]!.count < copies {
                let candidate = workers.filter { !target[shard]!.contains($0) }.min { (load[$0]!, $0) < (load[$1]!, $1) }!
                target[shard]!.insert(candidate)
                load[candidate]! += 1
            }
        }
        // Even out: move one copy at a time from the most loaded to the least loaded worker.
        var moved = true
        while moved {
            moved = false
            let most = workers.max { (load[$0]!, $1) < (load[$1]!, $0) }!
            let least = workers.min { (load[$0]!, $0) < (load[$1]!, $1) }!
            guard load[most]! - load[least]! > 1 else { break }
            if let shard = shards.sorted().first(where: { target[$0]!.contains(most) && !target[$0]!.contains(least) }) {
                target[shard]!.remove(most)
                target[shard]!.insert(least)
                load[most]! -= 1
                load[least]! += 1
                moved = true
            }
        }
        return target
    }
}
