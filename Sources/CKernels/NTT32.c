// 32-bit negacyclic NTT (Harvey butterflies with Shoup multiplication, lazy reduction in [0, 4q)), the same
// arithmetic as the Swift `NTT32Tables`, so every path gives identical words.
#include "CKernels.h"

#include <string.h>

static inline uint32_t mul_shoup_lazy(uint32_t v, uint32_t w, uint32_t ws, uint32_t q) {
    uint32_t qhat = (uint32_t)(((uint64_t)v * ws) >> 32);
    return v * w - qhat * q;
}

static inline uint32_t min_sub(uint32_t x, uint32_t m) {
    uint32_t y = x - m;
    return y < x ? y : x;
}

static void ntt32_forward_portable(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q) {
    const uint32_t two_q = 2 * q;
    size_t t = n;
    for (size_t m = 1; m < n; m <<= 1) {
        t >>= 1;
        for (size_t i = 0; i < m; i++) {
            const uint32_t wv = w[m + i], wsv = ws[m + i];
            uint32_t *x = a + 2 * i * t, *y = x + t;
            for (size_t j = 0; j < t; j++) {
                uint32_t u = min_sub(x[j], two_q);
                uint32_t p = mul_shoup_lazy(y[j], wv, wsv, q);
                x[j] = u + p;
                y[j] = u + two_q - p;
            }
        }
    }
    for (size_t j = 0; j < n; j++) a[j] = min_sub(min_sub(a[j], two_q), q);
}

static void ntt32_inverse_portable(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q,
                                   uint32_t inv_n, uint32_t inv_n_shoup) {
    const uint32_t two_q = 2 * q;
    size_t t = 1;
    for (size_t m = n; m > 1; m >>= 1) {
        const size_t h = m >> 1;
        for (size_t i = 0; i < h; i++) {
            const uint32_t wv = w[h + i], wsv = ws[h + i];
            uint32_t *x = a + 2 * i * t, *y = x + t;
            for (size_t j = 0; j < t; j++) {
                uint32_t u = x[j], v = y[j];
                x[j] = min_sub(u + v, two_q);
                y[j] = mul_shoup_lazy(u + two_q - v, wv, wsv, q);
            }
        }
        t <<= 1;
    }
    for (size_t j = 0; j < n; j++) a[j] = min_sub(mul_shoup_lazy(a[j], inv_n, inv_n_shoup, q), q);
}

#if defined(__x86_64__)
#include "Lanes32.h"

// Register permutations between the layouts of the last five forward stages (t = 16 → 8 → 4 → 2 → 1 → natural
// order) and the first five inverse stages (natural → t = 1 → 2 → 4 → 8 → 16), generated from the layout rule
// X[k] = (k / t)·2t + k mod t, Y[k] = X[k] + t over 32 words; `twiddle_lane[log2 t][k] = k / t`.
static const int32_t fused_forward[5][2][16] __attribute__((aligned(64))) = {
    {{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
     {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31}},
    {{0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
     {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31}},
    {{0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
     {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31}},
    {{0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30},
     {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31}},
    {{0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23},
     {8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31}},
};
static const int32_t fused_inverse[5][2][16] __attribute__((aligned(64))) = {
    {{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30},
     {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31}},
    {{0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30},
     {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31}},
    {{0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
     {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31}},
    {{0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
     {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31}},
    {{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
     {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31}},
};
static const int32_t twiddle_lane[4][16] __attribute__((aligned(64))) = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7},
    {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3},
    {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
};

AVX512 static inline __m512i load_index(const int32_t *p) { return _mm512_load_si512(p); }

// Forward butterfly on registers: x ← u + v·w, y ← u + 2q − v·w with v·w in [0, 2q) and u = x, reduced below
// `half` first when `reduce` (x below 2·half).
AVX512 static inline void forward_butterfly(__m512i *x, __m512i *y, __m512i w, __m512i ws, __m512i q, __m512i two_q,
                                            int reduce, __m512i half) {
    __m512i u = reduce ? vmin_sub(*x, half) : *x;
    __m512i p = vmul_shoup_lazy(*y, w, ws, q);
    *x = _mm512_add_epi32(u, p);
    *y = _mm512_sub_epi32(_mm512_add_epi32(u, two_q), p);
}

// One memory stage's butterflies over a pair of spans (`t` words each, read from `xi`, `yi`, written to `x`, `y`),
// with `reduce` a constant at each call so the loop carries no test.
AVX512 __attribute__((always_inline)) static inline void forward_span(uint32_t *x, uint32_t *y, const uint32_t *xi,
                                                                      const uint32_t *yi, size_t t, __m512i w,
                                                                      __m512i ws, __m512i q, __m512i two_q,
                                                                      const int reduce, __m512i half) {
    for (size_t j = 0; j < t; j += 16) {
        __m512i u = _mm512_loadu_si512(xi + j), v = _mm512_loadu_si512(yi + j);
        forward_butterfly(&u, &v, w, ws, q, two_q, reduce, half);
        _mm512_storeu_si512(x + j, u);
        _mm512_storeu_si512(y + j, v);
    }
}

// Which forward stages reduce their x inputs: values stay below B·q, B starting at 4 (the inputs' bound) and
// growing by 2 per stage; a stage reduces (x below C·q with C = B/2, then B = C + 2) only when B + 2 would no
// longer fit 32 bits. Below 2^28 that is one stage in four; at 30 bits every stage, as in the portable path.
// `half[s]` is C·q of stage s (0: no reduction); returns the outputs' final bound B.
static uint32_t forward_schedule(uint32_t q, size_t stages, uint32_t *half) {
    const uint64_t limit = (1ull << 32) / q;
    uint64_t bound = 4;
    for (size_t s = 0; s < stages; s++) {
        if (bound + 2 <= limit) {
            half[s] = 0;
            bound += 2;
        } else {
            half[s] = (uint32_t)(bound / 2 * q);
            bound = bound / 2 + 2;
        }
    }
    return (uint32_t)bound;
}

// Inverse butterfly on registers: x ← (x + y) reduced below 2q, y ← (x + 2q − y)·w.
AVX512 static inline void inverse_butterfly(__m512i *x, __m512i *y, __m512i w, __m512i ws, __m512i q, __m512i two_q) {
    __m512i u = *x, v = *y;
    *x = vmin_sub(_mm512_add_epi32(u, v), two_q);
    *y = vmul_shoup_lazy(_mm512_sub_epi32(_mm512_add_epi32(u, two_q), v), w, ws, q);
}

// Twiddles of the 16 X lanes of a 32-word block at distance t < 16: w[base + k / t].
AVX512 static inline void lane_twiddles(const uint32_t *w, const uint32_t *ws, size_t base, int log_t,
                                        __m512i *tw, __m512i *tws) {
    if (log_t == 0) {  // one twiddle per lane, in order
        *tw = _mm512_loadu_si512(w + base);
        *tws = _mm512_loadu_si512(ws + base);
        return;
    }
    const __m512i idx = load_index(twiddle_lane[log_t]);
    *tw = _mm512_permutexvar_epi32(idx, _mm512_loadu_si512(w + base));
    *tws = _mm512_permutexvar_epi32(idx, _mm512_loadu_si512(ws + base));
}

// The last five forward stages (t = 16 … 1) of `blocks` consecutive 32-word blocks from word `b`, in registers:
// eight blocks at a time give the out-of-order core independent chains to overlap (each stage's butterflies
// wait on a 10-cycle multiply), which measured 10% faster per transform than two.
AVX512 __attribute__((always_inline)) static inline void forward_tail(uint32_t *a, size_t n, size_t b, int blocks,
                                                                      const uint32_t *w, const uint32_t *ws, uint32_t q,
                                                                      int r16, __m512i h16, const int *rs,
                                                                      const __m512i *hs, uint32_t top) {
    const __m512i vq = _mm512_set1_epi32((int)q), v2q = _mm512_set1_epi32((int)(2 * q));
    __m512i x[8], y[8];
    for (int k = 0; k < blocks; k++) {
        x[k] = _mm512_loadu_si512(a + b + 32 * (size_t)k);
        y[k] = _mm512_loadu_si512(a + b + 32 * (size_t)k + 16);
    }
    const size_t g16 = n / 32 + b / 32;
    for (int k = 0; k < blocks; k++)
        forward_butterfly(&x[k], &y[k], _mm512_set1_epi32((int)w[g16 + (size_t)k]), _mm512_set1_epi32((int)ws[g16 + (size_t)k]),
                          vq, v2q, r16, h16);
    for (int step = 0; step < 4; step++) {
        const int log_t = 3 - step;
        const size_t tt = (size_t)1 << log_t;
        const __m512i i0 = load_index(fused_forward[step][0]), i1 = load_index(fused_forward[step][1]);
        for (int k = 0; k < blocks; k++) {
            __m512i nx = _mm512_permutex2var_epi32(x[k], i0, y[k]), ny = _mm512_permutex2var_epi32(x[k], i1, y[k]);
            __m512i tw, tws;
            lane_twiddles(w, ws, n / (2 * tt) + (b + 32 * (size_t)k) / (2 * tt), log_t, &tw, &tws);
            forward_butterfly(&nx, &ny, tw, tws, vq, v2q, rs[step], hs[step]);
            x[k] = nx;
            y[k] = ny;
        }
    }
    // The final reduction from below bound·q: C·q subtracted for C = top, top/2, …, 1.
    for (uint32_t c = top; c >= 1; c /= 2) {
        const __m512i vc = _mm512_set1_epi32((int)(c * q));
        for (int k = 0; k < blocks; k++) {
            x[k] = vmin_sub(x[k], vc);
            y[k] = vmin_sub(y[k], vc);
        }
    }
    const __m512i o0 = load_index(fused_forward[4][0]), o1 = load_index(fused_forward[4][1]);
    for (int k = 0; k < blocks; k++) {
        _mm512_storeu_si512(a + b + 32 * (size_t)k, _mm512_permutex2var_epi32(x[k], o0, y[k]));
        _mm512_storeu_si512(a + b + 32 * (size_t)k + 16, _mm512_permutex2var_epi32(x[k], o1, y[k]));
    }
}

AVX512 static void ntt32_forward_avx512(uint32_t *a, const uint32_t *src, size_t n, const uint32_t *w, const uint32_t *ws,
                                        uint32_t q) {
    const __m512i vq = _mm512_set1_epi32((int)q), v2q = _mm512_set1_epi32((int)(2 * q));
    uint32_t half[32];
    size_t stages = 0;
    while (((size_t)1 << stages) < n) stages++;
    const uint32_t bound = forward_schedule(q, stages, half);
    // Stages with t ≥ 32 stream through memory.
    size_t t = n, stage = 0;
    for (size_t m = 1; m < n / 32; m <<= 1, stage++) {
        t >>= 1;
        const int reduce = half[stage] != 0;
        const __m512i vh = _mm512_set1_epi32((int)half[stage]);
        // The first stage reads the source (the transform may be out of place), the others the output.
        const uint32_t *in = m == 1 ? src : a;
        for (size_t i = 0; i < m; i++) {
            const __m512i wv = _mm512_set1_epi32((int)w[m + i]), wsv = _mm512_set1_epi32((int)ws[m + i]);
            uint32_t *x = a + 2 * i * t, *y = x + t;
            const uint32_t *xi = in + 2 * i * t, *yi = xi + t;
            if (reduce) forward_span(x, y, xi, yi, t, wv, wsv, vq, v2q, 1, vh);
            else forward_span(x, y, xi, yi, t, wv, wsv, vq, v2q, 0, vh);
        }
    }
    // The last five stages (t = 16 … 1) run in registers (`forward_tail`).
    const int r16 = half[stage] != 0;
    const __m512i h16 = _mm512_set1_epi32((int)half[stage]);
    int rs[4];
    __m512i hs[4];
    for (int step = 0; step < 4; step++) {
        rs[step] = half[stage + 1 + (size_t)step] != 0;
        hs[step] = _mm512_set1_epi32((int)half[stage + 1 + (size_t)step]);
    }
    // The outputs are below bound·q: the final reduction starts at the power of two C with C < bound ≤ 2C.
    uint32_t top = 1;
    while (2 * top < bound) top *= 2;
    if (n >= 256) {
        for (size_t b = 0; b < n; b += 256) forward_tail(a, n, b, 8, w, ws, q, r16, h16, rs, hs, top);
    } else {
        for (size_t b = 0; b < n; b += 64) forward_tail(a, n, b, 2, w, ws, q, r16, h16, rs, hs, top);
    }
}

// The first five inverse stages (t = 1 … 16) of `blocks` consecutive 32-word blocks from word `b`, in registers,
// eight blocks at a time as in `forward_tail`.
AVX512 __attribute__((always_inline)) static inline void inverse_head(uint32_t *a, const uint32_t *src, size_t n,
                                                                      size_t b, int blocks,
                                                                      const uint32_t *w, const uint32_t *ws, uint32_t q) {
    const __m512i vq = _mm512_set1_epi32((int)q), v2q = _mm512_set1_epi32((int)(2 * q));
    const __m512i p0 = load_index(fused_inverse[0][0]), p1 = load_index(fused_inverse[0][1]);
    __m512i x[8], y[8];
    for (int k = 0; k < blocks; k++) {
        const __m512i va = _mm512_loadu_si512(src + b + 32 * (size_t)k);
        const __m512i vb = _mm512_loadu_si512(src + b + 32 * (size_t)k + 16);
        x[k] = _mm512_permutex2var_epi32(va, p0, vb);
        y[k] = _mm512_permutex2var_epi32(va, p1, vb);
    }
    for (int log_t = 0; log_t < 4; log_t++) {
        const size_t tt = (size_t)1 << log_t;
        const __m512i i0 = load_index(fused_inverse[log_t + 1][0]), i1 = load_index(fused_inverse[log_t + 1][1]);
        for (int k = 0; k < blocks; k++) {
            __m512i tw, tws;
            lane_twiddles(w, ws, n / (2 * tt) + (b + 32 * (size_t)k) / (2 * tt), log_t, &tw, &tws);
            inverse_butterfly(&x[k], &y[k], tw, tws, vq, v2q);
            const __m512i nx = _mm512_permutex2var_epi32(x[k], i0, y[k]), ny = _mm512_permutex2var_epi32(x[k], i1, y[k]);
            x[k] = nx;
            y[k] = ny;
        }
    }
    const size_t g16 = n / 32 + b / 32;
    for (int k = 0; k < blocks; k++) {
        inverse_butterfly(&x[k], &y[k], _mm512_set1_epi32((int)w[g16 + (size_t)k]), _mm512_set1_epi32((int)ws[g16 + (size_t)k]),
                          vq, v2q);
        _mm512_storeu_si512(a + b + 32 * (size_t)k, x[k]);
        _mm512_storeu_si512(a + b + 32 * (size_t)k + 16, y[k]);
    }
}

AVX512 static void ntt32_inverse_avx512(uint32_t *a, const uint32_t *src, size_t n, const uint32_t *w, const uint32_t *ws,
                                        uint32_t q, uint32_t inv_n, uint32_t inv_n_shoup) {
    const __m512i vq = _mm512_set1_epi32((int)q), v2q = _mm512_set1_epi32((int)(2 * q));
    // The first five stages (t = 1 … 16) run in registers (`inverse_head`), reading the source.
    if (n >= 256) {
        for (size_t b = 0; b < n; b += 256) inverse_head(a, src, n, b, 8, w, ws, q);
    } else {
        for (size_t b = 0; b < n; b += 64) inverse_head(a, src, n, b, 2, w, ws, q);
    }
    // Stages with t ≥ 32 stream through memory; the last one (t = n/2) also multiplies by n^{-1}.
    size_t t = 32;
    for (size_t m = n / 32; m > 2; m >>= 1) {
        const size_t h = m >> 1;
        for (size_t i = 0; i < h; i++) {
            const __m512i wv = _mm512_set1_epi32((int)w[h + i]), wsv = _mm512_set1_epi32((int)ws[h + i]);
            uint32_t *x = a + 2 * i * t, *y = x + t;
            for (size_t j = 0; j < t; j += 16) {
                __m512i u = _mm512_loadu_si512(x + j), v = _mm512_loadu_si512(y + j);
                inverse_butterfly(&u, &v, wv, wsv, vq, v2q);
                _mm512_storeu_si512(x + j, u);
                _mm512_storeu_si512(y + j, v);
            }
        }
        t <<= 1;
    }
    // x ← (x + y)·n^{-1}, y ← (x + 2q − y)·(w_1·n^{-1}): the scaling folded into the last butterflies, which
    // saves a pass over the row.
    const uint32_t w1 = (uint32_t)((uint64_t)w[1] * inv_n % q);
    const uint32_t w1s = (uint32_t)(((uint64_t)w1 << 32) / q);
    const __m512i iv = _mm512_set1_epi32((int)inv_n), ivs = _mm512_set1_epi32((int)inv_n_shoup);
    const __m512i wv = _mm512_set1_epi32((int)w1), wsv = _mm512_set1_epi32((int)w1s);
    uint32_t *x = a, *y = a + t;
    for (size_t j = 0; j < t; j += 16) {
        const __m512i u = _mm512_loadu_si512(x + j), v = _mm512_loadu_si512(y + j);
        const __m512i s = vmul_shoup_lazy(_mm512_add_epi32(u, v), iv, ivs, vq);
        const __m512i d = vmul_shoup_lazy(_mm512_sub_epi32(_mm512_add_epi32(u, v2q), v), wv, wsv, vq);
        _mm512_storeu_si512(x + j, vmin_sub(s, vq));
        _mm512_storeu_si512(y + j, vmin_sub(d, vq));
    }
}
#endif

void cv_ntt32_forward_to(uint32_t *dst, const uint32_t *src, size_t n, const uint32_t *w, const uint32_t *ws,
                         uint32_t q) {
#if defined(__x86_64__)
    if (n >= 64 && cv_active_level() >= CV_LEVEL_AVX512) {
        ntt32_forward_avx512(dst, src, n, w, ws, q);
        return;
    }
#endif
    if (dst != src) memcpy(dst, src, n * sizeof(uint32_t));
    ntt32_forward_portable(dst, n, w, ws, q);
}

void cv_ntt32_forward(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q) {
    cv_ntt32_forward_to(a, a, n, w, ws, q);
}

void cv_ntt32_inverse_to(uint32_t *dst, const uint32_t *src, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q,
                         uint32_t inv_n, uint32_t inv_n_shoup) {
#if defined(__x86_64__)
    if (n >= 64 && cv_active_level() >= CV_LEVEL_AVX512) {
        ntt32_inverse_avx512(dst, src, n, w, ws, q, inv_n, inv_n_shoup);
        return;
    }
#endif
    if (dst != src) memcpy(dst, src, n * sizeof(uint32_t));
    ntt32_inverse_portable(dst, n, w, ws, q, inv_n, inv_n_shoup);
}

void cv_ntt32_inverse(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q,
                      uint32_t inv_n, uint32_t inv_n_shoup) {
    cv_ntt32_inverse_to(a, a, n, w, ws, q, inv_n, inv_n_shoup);
}
