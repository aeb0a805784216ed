// 32-bit negacyclic NTT (Harvey butterflies with Shoup multiplication, lazy reduction in [0, 4q)), the same
// arithmetic as the Swift `NTT32Tables`, so every path gives identical words.
#include "CKernels.h"

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
#include <immintrin.h>
#define AVX512 __attribute__((target("avx512f")))

// High 32 bits of the lane-wise 32 × 32-bit products: even lanes from one pmuludq, odd lanes from another.
AVX512 static inline __m512i mulhi32(__m512i a, __m512i b) {
    __m512i even = _mm512_mul_epu32(a, b);
    __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(b, 32));
    return _mm512_mask_mov_epi32(_mm512_srli_epi64(even, 32), 0xAAAA, odd);
}

AVX512 static inline __m512i vmul_shoup_lazy(__m512i v, __m512i w, __m512i ws, __m512i q) {
    __m512i qhat = mulhi32(v, ws);
    return _mm512_sub_epi32(_mm512_mullo_epi32(v, w), _mm512_mullo_epi32(qhat, q));
}

AVX512 static inline __m512i vmin_sub(__m512i x, __m512i m) {
    return _mm512_min_epu32(x, _mm512_sub_epi32(x, m));
}

// Permutations for stages whose butterfly distance t is below 16: 32 consecutive words (A = first 16, B = next
// 16) hold 16 / t groups; X gathers the first halves of the groups, Y the second halves, W the twiddle index of
// each X lane; A' and B' put the results back.
typedef struct { __m512i x, y, a, b, w; } small_stage;

AVX512 static small_stage make_small_stage(size_t t) {
    int32_t x[16], y[16], ia[16], ib[16], iw[16];
    for (int k = 0; k < 16; k++) {
        int g = k / (int)t, o = k % (int)t;
        x[k] = g * 2 * (int)t + o;
        y[k] = x[k] + (int)t;
        iw[k] = g;
    }
    for (int e = 0; e < 32; e++) {
        int g = e / (2 * (int)t), o = e % (2 * (int)t);
        int src = o < (int)t ? g * (int)t + o : 16 + g * (int)t + o - (int)t;
        if (e < 16) ia[e] = src; else ib[e - 16] = src;
    }
    small_stage s;
    s.x = _mm512_loadu_si512(x);
    s.y = _mm512_loadu_si512(y);
    s.a = _mm512_loadu_si512(ia);
    s.b = _mm512_loadu_si512(ib);
    s.w = _mm512_loadu_si512(iw);
    return s;
}

AVX512 static void ntt32_forward_avx512(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q) {
    const __m512i vq = _mm512_set1_epi32((int)q), v2q = _mm512_set1_epi32((int)(2 * q));
    size_t t = n;
    for (size_t m = 1; m < n; m <<= 1) {
        t >>= 1;
        if (t >= 16) {
            for (size_t i = 0; i < m; i++) {
                const __m512i wv = _mm512_set1_epi32((int)w[m + i]), wsv = _mm512_set1_epi32((int)ws[m + i]);
                uint32_t *x = a + 2 * i * t, *y = x + t;
                for (size_t j = 0; j < t; j += 16) {
                    __m512i u = vmin_sub(_mm512_loadu_si512(x + j), v2q);
                    __m512i p = vmul_shoup_lazy(_mm512_loadu_si512(y + j), wv, wsv, vq);
                    _mm512_storeu_si512(x + j, _mm512_add_epi32(u, p));
                    _mm512_storeu_si512(y + j, _mm512_sub_epi32(_mm512_add_epi32(u, v2q), p));
                }
            }
        } else {
            const small_stage s = make_small_stage(t);
            for (size_t b = 0; b < n; b += 32) {
                __m512i va = _mm512_loadu_si512(a + b), vb = _mm512_loadu_si512(a + b + 16);
                __m512i x = _mm512_permutex2var_epi32(va, s.x, vb);
                __m512i y = _mm512_permutex2var_epi32(va, s.y, vb);
                size_t first = m + (b / 2) / t;
                __m512i wv = _mm512_permutexvar_epi32(s.w, _mm512_loadu_si512(w + first));
                __m512i wsv = _mm512_permutexvar_epi32(s.w, _mm512_loadu_si512(ws + first));
                __m512i u = vmin_sub(x, v2q);
                __m512i p = vmul_shoup_lazy(y, wv, wsv, vq);
                __m512i nx = _mm512_add_epi32(u, p);
                __m512i ny = _mm512_sub_epi32(_mm512_add_epi32(u, v2q), p);
                if (t == 1) {
                    // Last stage: reduce fully on the way out.
                    nx = vmin_sub(vmin_sub(nx, v2q), vq);
                    ny = vmin_sub(vmin_sub(ny, v2q), vq);
                }
                _mm512_storeu_si512(a + b, _mm512_permutex2var_epi32(nx, s.a, ny));
                _mm512_storeu_si512(a + b + 16, _mm512_permutex2var_epi32(nx, s.b, ny));
            }
        }
    }
}

AVX512 static void ntt32_inverse_avx512(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q,
                                        uint32_t inv_n, uint32_t inv_n_shoup) {
    const __m512i vq = _mm512_set1_epi32((int)q), v2q = _mm512_set1_epi32((int)(2 * q));
    size_t t = 1;
    for (size_t m = n; m > 1; m >>= 1) {
        const size_t h = m >> 1;
        if (t >= 16) {
            for (size_t i = 0; i < h; i++) {
                const __m512i wv = _mm512_set1_epi32((int)w[h + i]), wsv = _mm512_set1_epi32((int)ws[h + i]);
                uint32_t *x = a + 2 * i * t, *y = x + t;
                for (size_t j = 0; j < t; j += 16) {
                    __m512i u = _mm512_loadu_si512(x + j), v = _mm512_loadu_si512(y + j);
                    _mm512_storeu_si512(x + j, vmin_sub(_mm512_add_epi32(u, v), v2q));
                    _mm512_storeu_si512(y + j, vmul_shoup_lazy(_mm512_sub_epi32(_mm512_add_epi32(u, v2q), v),
                                                               wv, wsv, vq));
                }
            }
        } else {
            const small_stage s = make_small_stage(t);
            for (size_t b = 0; b < n; b += 32) {
                __m512i va = _mm512_loadu_si512(a + b), vb = _mm512_loadu_si512(a + b + 16);
                __m512i u = _mm512_permutex2var_epi32(va, s.x, vb);
                __m512i v = _mm512_permutex2var_epi32(va, s.y, vb);
                size_t first = h + (b / 2) / t;
                __m512i wv = _mm512_permutexvar_epi32(s.w, _mm512_loadu_si512(w + first));
                __m512i wsv = _mm512_permutexvar_epi32(s.w, _mm512_loadu_si512(ws + first));
                __m512i nx = vmin_sub(_mm512_add_epi32(u, v), v2q);
                __m512i ny = vmul_shoup_lazy(_mm512_sub_epi32(_mm512_add_epi32(u, v2q), v), wv, wsv, vq);
                _mm512_storeu_si512(a + b, _mm512_permutex2var_epi32(nx, s.a, ny));
                _mm512_storeu_si512(a + b + 16, _mm512_permutex2var_epi32(nx, s.b, ny));
            }
        }
        t <<= 1;
    }
    const __m512i iv = _mm512_set1_epi32((int)inv_n), ivs = _mm512_set1_epi32((int)inv_n_shoup);
    for (size_t j = 0; j < n; j += 16) {
        __m512i r = vmul_shoup_lazy(_mm512_loadu_si512(a + j), iv, ivs, vq);
        _mm512_storeu_si512(a + j, vmin_sub(r, vq));
    }
}
#endif

void cv_ntt32_forward(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q) {
#if defined(__x86_64__)
    if (n >= 32 && cv_active_level() >= CV_LEVEL_AVX512) { ntt32_forward_avx512(a, n, w, ws, q); return; }
#endif
    ntt32_forward_portable(a, n, w, ws, q);
}

void cv_ntt32_inverse(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q,
                      uint32_t inv_n, uint32_t inv_n_shoup) {
#if defined(__x86_64__)
    if (n >= 32 && cv_active_level() >= CV_LEVEL_AVX512) {
        ntt32_inverse_avx512(a, n, w, ws, q, inv_n, inv_n_shoup);
        return;
    }
#endif
    ntt32_inverse_portable(a, n, w, ws, q, inv_n, inv_n_shoup);
}
