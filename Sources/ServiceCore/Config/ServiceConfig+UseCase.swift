import Foundation
import LookupEngine
import LookupStorage

extension ServiceConfig {
    /// A use case: its name and where its processed shards are.
    public struct UseCase: Codable, Sendable, Equatable {
        /// Use-case name devices ask for, e.g. `net.example.lookup.block`.
        public var name: String
        /// Path stem of the shard files: `<fileStem>-<i>.params.txtpb` (or `.binpb`) with `<fileStem>-<i>.cvshard`
        /// (CallVeil) or `<fileStem>-<i>.bin` (the reference's format). Ignored when `manifest` is given.
        public var fileStem: String?
        /// A dataset manifest (`process-db`'s `<stem>.manifest.json`): the version is loaded through it, every
        /// file checked against its recorded size and SHA-256.
        public var manifest: String?
        /// Number of shards; when absent, consecutive shard files from 0 are counted.
        public var shardCount: Int?
        /// Config versions kept for queries built against older configs (default 2; 0 removes the use case).
        public var versionCount: Int?

        /// A use case.
        public init(name: String, fileStem: String? = nil, manifest: String? = nil, shardCount: Int? = nil, versionCount: Int? = nil) {
            self.name = name
            self.fileStem = fileStem
            self.manifest = manifest
            self.shardCount = shardCount
            self.versionCount = versionCount
        }
    }
}
