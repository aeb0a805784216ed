import CKernels

/// 32-bit tables of an NTT whose modulus has at most 30 bits (`4q < 2^32`), the case of every Live Caller ID
/// preset. Butterflies run in the `CKernels` transforms (AVX-512 when the CPU has it) with 32-bit Shoup
/// multiplication; results are identical to the 64-bit transform.
public struct NTT32Tables: Sendable {
    @usableFromInline let q: UInt32
    @usableFromInline let forward: [UInt32]
    @usableFromInline let forwardShoup: [UInt32]
    @usableFromInline let inverse: [UInt32]
    @usableFromInline let inverseShoup: [UInt32]
    @usableFromInline let inverseDegree: UInt32
    @usableFromInline let inverseDegreeShoup: UInt32

    /// 32-bit copies of 64-bit twiddle tables, or nil when the modulus is wider than 30 bits.
    init?(modulus: Modulus, forward fwd: [UInt64], inverse inv: [UInt64], inverseDegree invN: UInt64) {
        guard modulus.bitWidth <= 30 else { return nil }
        let qv = modulus.value
        func shoup32(_ w: UInt64) -> UInt32 { UInt32((w << 32) / qv) }
        q = UInt32(qv)
        forward = fwd.map { UInt32($0) }
        forwardShoup = fwd.map(shoup32)
        inverse = inv.map { UInt32($0) }
        inverseShoup = inv.map(shoup32)
        inverseDegree = UInt32(invN)
        inverseDegreeShoup = shoup32(invN)
    }

    /// Forward transform of `n` values below q in place; outputs fully reduced. Runs the AVX-512 kernel when the
    /// CPU has it, else the portable one (identical results).
    public func forwardInPlace(_ a: UnsafeMutablePointer<UInt32>, count n: Int) {
        forward.withUnsafeBufferPointer { w in
            forwardShoup.withUnsafeBufferPointer { ws in
                guard let wp = w.baseAddress, let wsp = ws.baseAddress else { return }
                cv_ntt32_forward(a, n, wp, wsp, q)
            }
        }
    }

    /// Inverse transform (with `N^{-1}`) of `n` values below q in place; outputs fully reduced.
    public func inverseInPlace(_ a: UnsafeMutablePointer<UInt32>, count n: Int) {
        inverse.withUnsafeBufferPointer { w in
            inverseShoup.withUnsafeBufferPointer { ws in
                guard let wp = w.baseAddress, let wsp = ws.baseAddress else { return }
                cv_ntt32_inverse(a, n, wp, wsp, q, inverseDegree, inverseDegreeShoup)
            }
        }
    }
}

extension [NTT32Tables] {
    /// Copies every table's forward, forward-Shoup, inverse and inverse-Shoup twiddles (n words each) into
    /// `words`, and their addresses into `pointers` grouped by kind: `pointers[kind · count + k]` for table k,
    /// kind 0…3 in that order. The layout the `CKernels` parameter blocks point into.
    func copyTwiddles(into words: UnsafeMutablePointer<UInt32>, pointers: UnsafeMutablePointer<UnsafePointer<UInt32>?>,
                      degree n: Int) {
        for (k, t) in enumerated() {
            for (kind, table) in [t.forward, t.forwardShoup, t.inverse, t.inverseShoup].enumerated() {
                let dst = words + (4 * k + kind) * n
                table.withUnsafeBufferPointer { src in
                    for j in 0..<n { dst[j] = src[j] }
                }
                pointers[kind * count + k] = UnsafePointer(dst)
            }
        }
    }
}
