import CKernels
@_spi(CustomByteBufferAllocator) import NIOCore

/// The allocator request bodies are collected with (`BodyAdmissionMiddleware`): a body of 128 KiB or more (a
/// phone's key upload) is a mapping of its own, unmapped once the request is done, rather than memory the tuned heap
/// keeps until the process is idle (bench/README.md, Service memory).
package enum BodyBufferAllocator {
    /// NIO's allocator over `cv_body_allocate` and its siblings.
    package static let allocator = ByteBufferAllocator(
        allocate: { cv_body_allocate($0) },
        reallocate: { cv_body_reallocate($0, $1, $2) },
        deallocate: { cv_body_deallocate($0) },
        copy: { cv_body_copy($0, $1, $2) })
}
