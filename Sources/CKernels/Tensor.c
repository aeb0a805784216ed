// The multiply-accumulate of ciphertext × ciphertext products: residues below 2^30, so each product is one
// 32 × 32-bit multiplication into 64 bits and sums of 14 products still fit 64 bits.
#include "CKernels.h"

#define CV_TENSOR(NAME, ATTR, T)                                                                                \
ATTR static void NAME(uint64_t *restrict acc0, uint64_t *restrict acc1, uint64_t *restrict acc2,                 \
                      const T *restrict a0, const T *restrict a1, const T *restrict b0,                          \
                      const T *restrict b1, size_t count) {                                                     \
    for (size_t j = 0; j < count; j++) {                                                                        \
        uint64_t x0 = (uint32_t)a0[j], x1 = (uint32_t)a1[j], y0 = (uint32_t)b0[j], y1 = (uint32_t)b1[j];        \
        acc0[j] += x0 * y0;                                                                                     \
        acc1[j] += x0 * y1 + x1 * y0;                                                                           \
        acc2[j] += x1 * y1;                                                                                     \
    }                                                                                                           \
}

CV_TENSOR(tensor32_portable, , uint32_t)
#if defined(__x86_64__)
CV_TENSOR(tensor32_avx512, __attribute__((target("avx512f"))), uint32_t)
#endif

void cv_tensor_accumulate32(uint64_t *acc0, uint64_t *acc1, uint64_t *acc2, const uint32_t *a0, const uint32_t *a1,
                            const uint32_t *b0, const uint32_t *b1, size_t count) {
#if defined(__x86_64__)
    if (cv_active_level() >= CV_LEVEL_AVX512) {
        tensor32_avx512(acc0, acc1, acc2, a0, a1, b0, b1, count);
        return;
    }
#endif
    tensor32_portable(acc0, acc1, acc2, a0, a1, b0, b1, count);
}

static void reduce64_portable(uint64_t *x, size_t count, uint32_t q) {
    for (size_t j = 0; j < count; j++) x[j] %= q;
}

#if defined(__x86_64__)
#include "Lanes32.h"

CV_AVX512DQ static void reduce64_avx512(uint64_t *x, size_t count, uint32_t q) {
    const __m512i vq = _mm512_set1_epi64((long long)q);
    const __m512d inv_q = _mm512_set1_pd(1.0 / (double)q);
    size_t j = 0;
    for (; j + 8 <= count; j += 8) _mm512_storeu_si512(x + j, reduce_lanes(_mm512_loadu_si512(x + j), inv_q, vq));
    reduce64_portable(x + j, count - j, q);
}
#endif

void cv_reduce64(uint64_t *x, size_t count, uint32_t q) {
    if (q == 0) return;
#if defined(__x86_64__)
    if (cv_active_level() >= CV_LEVEL_AVX512 && q >= (1u << 16)) {
        reduce64_avx512(x, count, q);
        return;
    }
#endif
    reduce64_portable(x, count, q);
}
