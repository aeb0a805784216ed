// The first-dimension multiply-accumulate over one 32-coefficient block of one column: 32-bit residues,
// 64-bit lazy sums, one Barrett reduction per output (and per `lazy` rows).
#include "CKernels.h"

static inline uint64_t barrett_reduce(uint64_t x, uint32_t q, uint64_t barrett) {
    uint64_t qhat = (uint64_t)(((unsigned __int128)x * barrett) >> 64);
    uint64_t r = x - qhat * q;
    return r >= q ? r - q : r;
}

static inline uint64_t *stream_out(uint64_t *out, size_t pair_stride, size_t poly_stride, size_t s) {
    return out + (s / 2) * pair_stride + (s % 2) * poly_stride;
}

static void scan_block32_portable(uint64_t *out, size_t pair_stride, size_t poly_stride,
                                  const uint32_t *pt, const uint8_t *present, size_t rows,
                                  const uint32_t *sel, size_t streams, uint32_t q, uint64_t barrett, size_t lazy) {
    for (size_t s = 0; s < streams; s++) {
        uint64_t total[32] = {0}, acc[32] = {0};
        size_t pending = 0;
        for (size_t r = 0; r < rows; r++) {
            if (!present[r]) continue;
            const uint32_t *p = pt + r * 32, *x = sel + (r * streams + s) * 32;
            for (int k = 0; k < 32; k++) acc[k] += (uint64_t)p[k] * x[k];
            if (++pending == lazy) {
                for (int k = 0; k < 32; k++) { total[k] += barrett_reduce(acc[k], q, barrett); acc[k] = 0; }
                pending = 0;
            }
        }
        uint64_t *o = stream_out(out, pair_stride, poly_stride, s);
        for (int k = 0; k < 32; k++) o[k] = barrett_reduce(total[k] + barrett_reduce(acc[k], q, barrett), q, barrett);
    }
}

#if defined(__x86_64__)
#include <immintrin.h>
#define AVX512 __attribute__((target("avx512f")))

// G streams at once, 4 accumulators each (even and odd lanes of the block's two 16-word halves), all in
// registers; the plaintext block is loaded once per row for the G streams.
#define CV_SCAN_GROUP(G)                                                                                       \
AVX512 static void scan_group_##G(uint64_t *out, size_t pair_stride, size_t poly_stride, size_t first,        \
                                  const uint32_t *pt, const uint8_t *present, size_t rows,                     \
                                  const uint32_t *sel, size_t streams, uint32_t q, uint64_t barrett,           \
                                  size_t lazy) {                                                               \
    __m512i acc[G][4];                                                                                         \
    uint64_t total[G][32];                                                                                     \
    for (int g = 0; g < G; g++) {                                                                              \
        for (int k = 0; k < 4; k++) acc[g][k] = _mm512_setzero_si512();                                        \
        for (int k = 0; k < 32; k++) total[g][k] = 0;                                                          \
    }                                                                                                          \
    size_t pending = 0;                                                                                        \
    for (size_t r = 0; r < rows; r++) {                                                                        \
        if (!present[r]) continue;                                                                             \
        const __m512i p0 = _mm512_loadu_si512(pt + r * 32), p1 = _mm512_loadu_si512(pt + r * 32 + 16);        \
        const __m512i p0o = _mm512_srli_epi64(p0, 32), p1o = _mm512_srli_epi64(p1, 32);                        \
        const uint32_t *x = sel + (r * streams + first) * 32;                                                  \
        _mm_prefetch((const char *)(pt + (r + 64) * 32), _MM_HINT_T0);                                          \
        _mm_prefetch((const char *)(pt + (r + 64) * 32 + 16), _MM_HINT_T0);                                     \
        for (int g = 0; g < G; g++) {                                                                          \
            const __m512i s0 = _mm512_loadu_si512(x + g * 32), s1 = _mm512_loadu_si512(x + g * 32 + 16);      \
            acc[g][0] = _mm512_add_epi64(acc[g][0], _mm512_mul_epu32(p0, s0));                                 \
            acc[g][1] = _mm512_add_epi64(acc[g][1], _mm512_mul_epu32(p0o, _mm512_srli_epi64(s0, 32)));         \
            acc[g][2] = _mm512_add_epi64(acc[g][2], _mm512_mul_epu32(p1, s1));                                 \
            acc[g][3] = _mm512_add_epi64(acc[g][3], _mm512_mul_epu32(p1o, _mm512_srli_epi64(s1, 32)));         \
        }                                                                                                      \
        if (++pending == lazy) {                                                                               \
            spill_##G(acc, total, q, barrett);                                                                 \
            pending = 0;                                                                                       \
        }                                                                                                      \
    }                                                                                                          \
    spill_##G(acc, total, q, barrett);                                                                         \
    for (int g = 0; g < G; g++) {                                                                              \
        uint64_t *o = stream_out(out, pair_stride, poly_stride, first + (size_t)g);                            \
        for (int k = 0; k < 32; k++) o[k] = barrett_reduce(total[g][k], q, barrett);                           \
    }                                                                                                          \
}

// Adds the reduced accumulators into `total` (coefficient order) and clears them.
#define CV_SCAN_SPILL(G)                                                                                       \
AVX512 __attribute__((always_inline)) static inline void spill_##G(__m512i acc[G][4], uint64_t total[G][32], uint32_t q, uint64_t barrett) {  \
    for (int g = 0; g < G; g++) {                                                                              \
        uint64_t lanes[4][8];                                                                                  \
        for (int k = 0; k < 4; k++) {                                                                          \
            _mm512_storeu_si512(lanes[k], acc[g][k]);                                                          \
            acc[g][k] = _mm512_setzero_si512();                                                                \
        }                                                                                                      \
        for (int i = 0; i < 8; i++) {                                                                          \
            total[g][2 * i] += barrett_reduce(lanes[0][i], q, barrett);                                        \
            total[g][2 * i + 1] += barrett_reduce(lanes[1][i], q, barrett);                                    \
            total[g][16 + 2 * i] += barrett_reduce(lanes[2][i], q, barrett);                                   \
            total[g][16 + 2 * i + 1] += barrett_reduce(lanes[3][i], q, barrett);                               \
        }                                                                                                      \
    }                                                                                                          \
}

CV_SCAN_SPILL(1)
CV_SCAN_SPILL(2)
CV_SCAN_SPILL(4)
CV_SCAN_GROUP(1)
CV_SCAN_GROUP(2)
CV_SCAN_GROUP(4)
#endif

void cv_scan_block32(uint64_t *out, size_t pair_stride, size_t poly_stride,
                     const uint32_t *pt, const uint8_t *present, size_t rows,
                     const uint32_t *sel, size_t streams,
                     uint32_t q, uint64_t barrett, size_t lazy) {
    if (lazy == 0) lazy = 1;
#if defined(__x86_64__)
    if (cv_active_level() >= CV_LEVEL_AVX512) {
        size_t s = 0;
        for (; s + 4 <= streams; s += 4)
            scan_group_4(out, pair_stride, poly_stride, s, pt, present, rows, sel, streams, q, barrett, lazy);
        for (; s + 2 <= streams; s += 2)
            scan_group_2(out, pair_stride, poly_stride, s, pt, present, rows, sel, streams, q, barrett, lazy);
        for (; s < streams; s++)
            scan_group_1(out, pair_stride, poly_stride, s, pt, present, rows, sel, streams, q, barrett, lazy);
        return;
    }
#endif
    scan_block32_portable(out, pair_stride, poly_stride, pt, present, rows, sel, streams, q, barrett, lazy);
}
