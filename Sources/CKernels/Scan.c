// The first-dimension multiply-accumulate over one 32-coefficient block of one column: 32-bit residues,
// 64-bit lazy sums, one Barrett reduction per output (and per `lazy` rows).
#include "CKernels.h"

static inline uint64_t barrett_reduce(uint64_t x, uint32_t q, uint64_t barrett) {
    uint64_t qhat = (uint64_t)(((unsigned __int128)x * barrett) >> 64);
    uint64_t r = x - qhat * q;
    return r >= q ? r - q : r;
}

static inline uint32_t *stream_out(uint32_t *out, size_t pair_stride, size_t poly_stride, size_t s) {
    return out + (s / 2) * pair_stride + (s % 2) * poly_stride;
}

static void scan_block32_portable(uint32_t *out, size_t pair_stride, size_t poly_stride,
                                  const uint32_t *pt, const uint8_t *present, size_t rows,
                                  const uint32_t *const *sel, size_t row_stride, size_t streams, uint32_t q,
                                  uint64_t barrett, size_t lazy) {
    for (size_t s = 0; s < streams; s++) {
        uint64_t total[32] = {0}, acc[32] = {0};
        size_t pending = 0;
        for (size_t r = 0; r < rows; r++) {
            if (!present[r]) continue;
            const uint32_t *p = pt + r * 32, *x = sel[s] + r * row_stride;
            for (int k = 0; k < 32; k++) acc[k] += (uint64_t)p[k] * x[k];
            if (++pending == lazy) {
                for (int k = 0; k < 32; k++) { total[k] += barrett_reduce(acc[k], q, barrett); acc[k] = 0; }
                pending = 0;
            }
        }
        uint32_t *o = stream_out(out, pair_stride, poly_stride, s);
        for (int k = 0; k < 32; k++) o[k] = (uint32_t)barrett_reduce(total[k] + barrett_reduce(acc[k], q, barrett), q, barrett);
    }
}

#if defined(__x86_64__)
#include <immintrin.h>
#define AVX512 __attribute__((target("avx512f")))

// Adds one stream's reduced accumulators (even and odd lanes of the two 16-word halves) into `total`
// (coefficient order) and clears them.
AVX512 __attribute__((always_inline)) static inline void spill(__m512i *e0, __m512i *o0, __m512i *e1, __m512i *o1,
                                                               uint64_t *total, uint32_t q, uint64_t barrett) {
    uint64_t lanes[4][8];
    _mm512_storeu_si512(lanes[0], *e0);
    _mm512_storeu_si512(lanes[1], *o0);
    _mm512_storeu_si512(lanes[2], *e1);
    _mm512_storeu_si512(lanes[3], *o1);
    *e0 = *o0 = *e1 = *o1 = _mm512_setzero_si512();
    for (int i = 0; i < 8; i++) {
        total[2 * i] += barrett_reduce(lanes[0][i], q, barrett);
        total[2 * i + 1] += barrett_reduce(lanes[1][i], q, barrett);
        total[16 + 2 * i] += barrett_reduce(lanes[2][i], q, barrett);
        total[16 + 2 * i + 1] += barrett_reduce(lanes[3][i], q, barrett);
    }
}

// Accumulators of stream g are named variables (not an array), so they stay in registers.
#define CV_ACC_DECL(g)                                                                                          \
    __m512i e0_##g = _mm512_setzero_si512(), o0_##g = e0_##g, e1_##g = e0_##g, o1_##g = e0_##g;                  \
    const uint32_t *const x_##g = sel[first + (g)];
#define CV_ACC_STEP(g)                                                                                          \
    {                                                                                                           \
        const uint32_t *x = x_##g + r * row_stride;                                                             \
        _mm_prefetch((const char *)(x + 8 * row_stride), _MM_HINT_T0);                                           \
        _mm_prefetch((const char *)(x + 8 * row_stride + 16), _MM_HINT_T0);                                      \
        const __m512i s0 = _mm512_loadu_si512(x), s1 = _mm512_loadu_si512(x + 16);                              \
        e0_##g = _mm512_add_epi64(e0_##g, _mm512_mul_epu32(p0, s0));                                             \
        o0_##g = _mm512_add_epi64(o0_##g, _mm512_mul_epu32(p0o, _mm512_srli_epi64(s0, 32)));                     \
        e1_##g = _mm512_add_epi64(e1_##g, _mm512_mul_epu32(p1, s1));                                             \
        o1_##g = _mm512_add_epi64(o1_##g, _mm512_mul_epu32(p1o, _mm512_srli_epi64(s1, 32)));                     \
    }
#define CV_ACC_SPILL(g) spill(&e0_##g, &o0_##g, &e1_##g, &o1_##g, total[g], q, barrett);

// G streams at once: the plaintext block row is loaded once for the G streams; DB rows are prefetched 32 rows
// (4 KiB) ahead, which the hardware prefetchers, stopping at page boundaries, do not do on their own.
#define CV_SCAN_GROUP(G, DECL, STEP, SPILL)                                                                     \
AVX512 static void scan_group_##G(uint32_t *out, size_t pair_stride, size_t poly_stride, size_t first,        \
                                  const uint32_t *pt, const uint8_t *present, size_t rows,                     \
                                  const uint32_t *const *sel, size_t row_stride, uint32_t q,                   \
                                  uint64_t barrett, size_t lazy) {                                             \
    uint64_t total[G][32];                                                                                     \
    for (int g = 0; g < G; g++)                                                                                \
        for (int k = 0; k < 32; k++) total[g][k] = 0;                                                          \
    DECL                                                                                                       \
    size_t pending = 0;                                                                                        \
    for (size_t r = 0; r < rows; r++) {                                                                        \
        if (!present[r]) continue;                                                                             \
        const __m512i p0 = _mm512_loadu_si512(pt + r * 32), p1 = _mm512_loadu_si512(pt + r * 32 + 16);        \
        const __m512i p0o = _mm512_srli_epi64(p0, 32), p1o = _mm512_srli_epi64(p1, 32);                        \
        _mm_prefetch((const char *)(pt + (r + 32) * 32), _MM_HINT_T0);                                         \
        _mm_prefetch((const char *)(pt + (r + 32) * 32 + 16), _MM_HINT_T0);                                    \
        STEP                                                                                                   \
        if (++pending == lazy) {                                                                               \
            SPILL                                                                                              \
            pending = 0;                                                                                       \
        }                                                                                                      \
    }                                                                                                          \
    SPILL                                                                                                      \
    for (int g = 0; g < G; g++) {                                                                              \
        uint32_t *o = stream_out(out, pair_stride, poly_stride, first + (size_t)g);                            \
        for (int k = 0; k < 32; k++) o[k] = (uint32_t)barrett_reduce(total[g][k], q, barrett);                 \
    }                                                                                                          \
}

CV_SCAN_GROUP(1, CV_ACC_DECL(0), CV_ACC_STEP(0), CV_ACC_SPILL(0))
CV_SCAN_GROUP(2, CV_ACC_DECL(0) CV_ACC_DECL(1), CV_ACC_STEP(0) CV_ACC_STEP(1), CV_ACC_SPILL(0) CV_ACC_SPILL(1))
CV_SCAN_GROUP(4, CV_ACC_DECL(0) CV_ACC_DECL(1) CV_ACC_DECL(2) CV_ACC_DECL(3),
              CV_ACC_STEP(0) CV_ACC_STEP(1) CV_ACC_STEP(2) CV_ACC_STEP(3),
              CV_ACC_SPILL(0) CV_ACC_SPILL(1) CV_ACC_SPILL(2) CV_ACC_SPILL(3))
#endif

void cv_scan_block32(uint32_t *out, size_t pair_stride, size_t poly_stride,
                     const uint32_t *pt, const uint8_t *present, size_t rows,
                     const uint32_t *const *sel, size_t row_stride, size_t streams,
                     uint32_t q, uint64_t barrett, size_t lazy) {
    if (lazy == 0) lazy = 1;
#if defined(__x86_64__)
    if (cv_active_level() >= CV_LEVEL_AVX512) {
        size_t s = 0;
        for (; s + 4 <= streams; s += 4)
            scan_group_4(out, pair_stride, poly_stride, s, pt, present, rows, sel, row_stride, q, barrett, lazy);
        for (; s + 2 <= streams; s += 2)
            scan_group_2(out, pair_stride, poly_stride, s, pt, present, rows, sel, row_stride, q, barrett, lazy);
        for (; s < streams; s++)
            scan_group_1(out, pair_stride, poly_stride, s, pt, present, rows, sel, row_stride, q, barrett, lazy);
        return;
    }
#endif
    scan_block32_portable(out, pair_stride, poly_stride, pt, present, rows, sel, row_stride, streams, q, barrett, lazy);
}
