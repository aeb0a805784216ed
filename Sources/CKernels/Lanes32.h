// AVX-512 lane helpers shared by the 32-bit kernels: Shoup products and conditional subtraction on 16 words, and
// the reduction of 64-bit sums.
#ifndef CV_LANES32_H
#define CV_LANES32_H
#if defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#define AVX512 __attribute__((target("avx512f")))
#define CV_AVX512DQ __attribute__((target("avx512f,avx512dq")))

// High 32 bits of the lane-wise 32 × 32-bit products: even lanes from one pmuludq, odd lanes from another, merged
// by one permute (one uop fewer than a shift and a masked move).
// Lane picks of permutex2var: the high words of the even-lane products, then of the odd-lane products.
static const int32_t cv_hi_pick[16] __attribute__((aligned(64))) = {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31};
AVX512 static inline __m512i mulhi32(__m512i a, __m512i b) {
    __m512i even = _mm512_mul_epu32(a, b);
    __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(b, 32));
    return _mm512_permutex2var_epi32(even, _mm512_load_si512(cv_hi_pick), odd);
}

AVX512 static inline __m512i vmul_shoup_lazy(__m512i v, __m512i w, __m512i ws, __m512i q) {
    __m512i qhat = mulhi32(v, ws);
    return _mm512_sub_epi32(_mm512_mullo_epi32(v, w), _mm512_mullo_epi32(qhat, q));
}

AVX512 static inline __m512i vmin_sub(__m512i x, __m512i m) {
    return _mm512_min_epu32(x, _mm512_sub_epi32(x, m));
}

// `x mod q` in each 64-bit lane, for q ≥ 2^16: the quotient estimated in double precision is within 1 of the true
// one (its relative error is below 2^-51 and x/q < 2^48), the exact remainder in [-q, 2q) is then corrected once
// each way.
CV_AVX512DQ __attribute__((always_inline)) static inline __m512i reduce_lanes(__m512i x, __m512d inv_q, __m512i vq) {
    const __m512i qhat = _mm512_cvttpd_epu64(_mm512_mul_pd(_mm512_cvtepu64_pd(x), inv_q));
    __m512i r = _mm512_sub_epi64(x, _mm512_mullo_epi64(qhat, vq));
    r = _mm512_mask_add_epi64(r, _mm512_cmplt_epi64_mask(r, _mm512_setzero_si512()), r, vq);
    return _mm512_min_epu64(r, _mm512_sub_epi64(r, vq));
}

#endif
#endif
