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
#include "Lanes32.h"

// Adds one stream's reduced accumulators (even and odd lanes of the two 16-word halves) into its totals (same
// lane order) and clears them.
CV_AVX512DQ __attribute__((always_inline)) static inline void spill(__m512i *e0, __m512i *o0, __m512i *e1, __m512i *o1,
                                                                 __m512i *total, __m512d inv_q, __m512i vq) {
    total[0] = _mm512_add_epi64(total[0], reduce_lanes(*e0, inv_q, vq));
    total[1] = _mm512_add_epi64(total[1], reduce_lanes(*o0, inv_q, vq));
    total[2] = _mm512_add_epi64(total[2], reduce_lanes(*e1, inv_q, vq));
    total[3] = _mm512_add_epi64(total[3], reduce_lanes(*o1, inv_q, vq));
    *e0 = *o0 = *e1 = *o1 = _mm512_setzero_si512();
}

// Lane picks of permutex2var: the low words of the even-lane totals interleaved with those of the odd-lane totals
// (coefficient order).
static const int32_t interleave_low[16] __attribute__((aligned(64))) = {0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30};

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
#define CV_ACC_SPILL(g) spill(&e0_##g, &o0_##g, &e1_##g, &o1_##g, total[g], inv_q, vq);

// G streams at once: the plaintext block row is loaded once for the G streams; DB rows are prefetched 32 rows
// (4 KiB) ahead, which the hardware prefetchers, stopping at page boundaries, do not do on their own. The
// prefetch goes to the outer caches (T2): a line read once need not hold an L1 fill buffer for the whole memory
// latency, which left the scan 10% slower (measured side by side on a 1,000,000-row shard's pattern).
#define CV_SCAN_GROUP(G, DECL, STEP, SPILL)                                                                     \
CV_AVX512DQ static void scan_group_##G(uint32_t *out, size_t pair_stride, size_t poly_stride, size_t first,      \
                                    const uint32_t *pt, const uint8_t *present, size_t rows,                   \
                                    const uint32_t *const *sel, size_t row_stride, uint32_t q, size_t lazy) {  \
    const __m512i vq = _mm512_set1_epi64((long long)q);                                                        \
    const __m512d inv_q = _mm512_set1_pd(1.0 / (double)q);                                                     \
    __m512i total[G][4];                                                                                       \
    for (int g = 0; g < G; g++)                                                                                \
        for (int k = 0; k < 4; k++) total[g][k] = _mm512_setzero_si512();                                      \
    DECL                                                                                                       \
    size_t pending = 0;                                                                                        \
    for (size_t r = 0; r < rows; r++) {                                                                        \
        if (!present[r]) continue;                                                                             \
        const __m512i p0 = _mm512_loadu_si512(pt + r * 32), p1 = _mm512_loadu_si512(pt + r * 32 + 16);        \
        const __m512i p0o = _mm512_srli_epi64(p0, 32), p1o = _mm512_srli_epi64(p1, 32);                        \
        _mm_prefetch((const char *)(pt + (r + 32) * 32), _MM_HINT_T2);                                         \
        _mm_prefetch((const char *)(pt + (r + 32) * 32 + 16), _MM_HINT_T2);                                    \
        STEP                                                                                                   \
        if (++pending == lazy) {                                                                               \
            SPILL                                                                                              \
            pending = 0;                                                                                       \
        }                                                                                                      \
    }                                                                                                          \
    SPILL                                                                                                      \
    const __m512i pick = _mm512_load_si512(interleave_low);                                                    \
    for (int g = 0; g < G; g++) {                                                                              \
        uint32_t *o = stream_out(out, pair_stride, poly_stride, first + (size_t)g);                            \
        _mm512_storeu_si512(o, _mm512_permutex2var_epi32(reduce_lanes(total[g][0], inv_q, vq), pick,           \
                                                         reduce_lanes(total[g][1], inv_q, vq)));               \
        _mm512_storeu_si512(o + 16, _mm512_permutex2var_epi32(reduce_lanes(total[g][2], inv_q, vq), pick,      \
                                                              reduce_lanes(total[g][3], inv_q, vq)));          \
    }                                                                                                          \
}

// Multiply-accumulate of one plaintext block row (`p0`, `p1` and their odd lanes) with one stream's selector
// words `s` (16-word halves and their odd lanes, in the order of `acc`).
AVX512 __attribute__((always_inline)) static inline void accumulate(__m512i *acc, __m512i p0, __m512i p0o, __m512i p1,
                                                                    __m512i p1o, const __m512i *s) {
    acc[0] = _mm512_add_epi64(acc[0], _mm512_mul_epu32(p0, s[0]));
    acc[1] = _mm512_add_epi64(acc[1], _mm512_mul_epu32(p0o, s[1]));
    acc[2] = _mm512_add_epi64(acc[2], _mm512_mul_epu32(p1, s[2]));
    acc[3] = _mm512_add_epi64(acc[3], _mm512_mul_epu32(p1o, s[3]));
}

// One query's two streams over `C` columns at once (2 or 4): each selector row is loaded once for all of them,
// which divides the selector traffic from L2 (the selectors of a task's blocks do not stay in L1 across its
// columns); on a 1,000,000-row shard's pattern two columns measured 10–13% faster than one and four another 4–6%
// faster than two. An absent row is read as zeros (a masked load), so the columns' gaps need not match; the
// extra zero terms only make the lazy reductions come earlier.
CV_AVX512DQ __attribute__((always_inline)) static inline void
scan_columns(const int C, uint32_t *out, size_t pair_stride, size_t poly_stride, size_t out_column_stride,
             const uint32_t *pt, size_t pt_column_stride, const uint8_t *present, size_t present_column_stride,
             size_t rows, const uint32_t *const *sel, size_t row_stride, uint32_t q, size_t lazy) {
    const __m512i vq = _mm512_set1_epi64((long long)q);
    const __m512d inv_q = _mm512_set1_pd(1.0 / (double)q);
    __m512i total[4][2][4], acc[4][2][4];
    for (int c = 0; c < C; c++)
        for (int g = 0; g < 2; g++)
            for (int k = 0; k < 4; k++) total[c][g][k] = acc[c][g][k] = _mm512_setzero_si512();
    size_t pending = 0;
    for (size_t r = 0; r < rows; r++) {
        __m512i s[2][4];
        for (int g = 0; g < 2; g++) {
            const uint32_t *x = sel[g] + r * row_stride;
            _mm_prefetch((const char *)(x + 8 * row_stride), _MM_HINT_T0);
            _mm_prefetch((const char *)(x + 8 * row_stride + 16), _MM_HINT_T0);
            s[g][0] = _mm512_loadu_si512(x);
            s[g][2] = _mm512_loadu_si512(x + 16);
            s[g][1] = _mm512_srli_epi64(s[g][0], 32);
            s[g][3] = _mm512_srli_epi64(s[g][2], 32);
        }
        for (int c = 0; c < C; c++) {
            const uint32_t *p = pt + (size_t)c * pt_column_stride + r * 32;
            _mm_prefetch((const char *)(p + 32 * 32), _MM_HINT_T2);
            _mm_prefetch((const char *)(p + 32 * 32 + 16), _MM_HINT_T2);
            const __mmask16 m = present[(size_t)c * present_column_stride + r] ? 0xFFFF : 0;
            const __m512i p0 = _mm512_maskz_loadu_epi32(m, p), p1 = _mm512_maskz_loadu_epi32(m, p + 16);
            const __m512i p0o = _mm512_srli_epi64(p0, 32), p1o = _mm512_srli_epi64(p1, 32);
            for (int g = 0; g < 2; g++) accumulate(acc[c][g], p0, p0o, p1, p1o, s[g]);
        }
        if (++pending == lazy) {
            for (int c = 0; c < C; c++)
                for (int g = 0; g < 2; g++)
                    spill(&acc[c][g][0], &acc[c][g][1], &acc[c][g][2], &acc[c][g][3], total[c][g], inv_q, vq);
            pending = 0;
        }
    }
    const __m512i pick = _mm512_load_si512(interleave_low);
    for (int c = 0; c < C; c++) {
        for (int g = 0; g < 2; g++) {
            spill(&acc[c][g][0], &acc[c][g][1], &acc[c][g][2], &acc[c][g][3], total[c][g], inv_q, vq);
            uint32_t *o = stream_out(out + (size_t)c * out_column_stride, pair_stride, poly_stride, (size_t)g);
            _mm512_storeu_si512(o, _mm512_permutex2var_epi32(reduce_lanes(total[c][g][0], inv_q, vq), pick,
                                                             reduce_lanes(total[c][g][1], inv_q, vq)));
            _mm512_storeu_si512(o + 16, _mm512_permutex2var_epi32(reduce_lanes(total[c][g][2], inv_q, vq), pick,
                                                                  reduce_lanes(total[c][g][3], inv_q, vq)));
        }
    }
}

#define CV_SCAN_COLUMNS(C)                                                                                      \
CV_AVX512DQ static void scan_columns_##C(uint32_t *out, size_t pair_stride, size_t poly_stride,                  \
                                         size_t out_column_stride, const uint32_t *pt, size_t pt_column_stride,  \
                                         const uint8_t *present, size_t present_column_stride, size_t rows,      \
                                         const uint32_t *const *sel, size_t row_stride, uint32_t q, size_t lazy) {\
    scan_columns(C, out, pair_stride, poly_stride, out_column_stride, pt, pt_column_stride, present,           \
                 present_column_stride, rows, sel, row_stride, q, lazy);                                        \
}
CV_SCAN_COLUMNS(2)
CV_SCAN_COLUMNS(4)

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
    if (cv_active_level() >= CV_LEVEL_AVX512 && q >= (1u << 16)) {
        size_t s = 0;
        for (; s + 4 <= streams; s += 4)
            scan_group_4(out, pair_stride, poly_stride, s, pt, present, rows, sel, row_stride, q, lazy);
        for (; s + 2 <= streams; s += 2)
            scan_group_2(out, pair_stride, poly_stride, s, pt, present, rows, sel, row_stride, q, lazy);
        for (; s < streams; s++)
            scan_group_1(out, pair_stride, poly_stride, s, pt, present, rows, sel, row_stride, q, lazy);
        return;
    }
#endif
    scan_block32_portable(out, pair_stride, poly_stride, pt, present, rows, sel, row_stride, streams, q, barrett, lazy);
}

void cv_scan_columns32(uint32_t *out, size_t out_pair_stride, size_t out_poly_stride, size_t out_column_stride,
                       const uint32_t *pt, size_t pt_column_stride, const uint8_t *present,
                       size_t present_column_stride, size_t columns, size_t rows, const uint32_t *const *sel,
                       size_t sel_row_stride, size_t streams, uint32_t q, uint64_t barrett, size_t lazy) {
    if (lazy == 0) lazy = 1;
    size_t c = 0;
#if defined(__x86_64__)
    if (streams == 2 && cv_active_level() >= CV_LEVEL_AVX512 && q >= (1u << 16)) {
        for (; c + 4 <= columns; c += 4)
            scan_columns_4(out + c * out_column_stride, out_pair_stride, out_poly_stride, out_column_stride,
                           pt + c * pt_column_stride, pt_column_stride, present + c * present_column_stride,
                           present_column_stride, rows, sel, sel_row_stride, q, lazy);
        for (; c + 2 <= columns; c += 2)
            scan_columns_2(out + c * out_column_stride, out_pair_stride, out_poly_stride, out_column_stride,
                           pt + c * pt_column_stride, pt_column_stride, present + c * present_column_stride,
                           present_column_stride, rows, sel, sel_row_stride, q, lazy);
    }
#endif
    for (; c < columns; c++)
        cv_scan_block32(out + c * out_column_stride, out_pair_stride, out_poly_stride, pt + c * pt_column_stride,
                        present + c * present_column_stride, rows, sel, sel_row_stride, streams, q, barrett, lazy);
}
