// Centred RNS base conversion on 32-bit residues: pass 1 computes v_i = [x_i·(B/b_i)^{-1}]_{b_i}, the correction
// α = round(Σ v_i / b_i) follows from the v rows, and pass 2 forms Σ v_i·[B/b_i]_m − α·[B]_m for each target m
// with Shoup products kept below 2m. Same results as `BaseConverter.convertCentered`. Inputs and outputs come as
// 64-bit words (the engine's polynomials) or 32-bit words (the fused kernels' buffers).
#include "CKernels.h"

#include <string.h>

// α's sum must round the same way in every path: no fused multiply-adds.
#pragma STDC FP_CONTRACT OFF

static inline uint32_t shoup_lazy(uint32_t v, uint32_t w, uint32_t ws, uint32_t q) {
    uint32_t qhat = (uint32_t)(((uint64_t)v * ws) >> 32);
    return v * w - qhat * q;
}

#define CV_CONVERT_PASS1(NAME, ATTR, IN_T)                                                                      \
ATTR static void NAME(uint32_t *restrict v, const IN_T *restrict x, size_t count, uint32_t b, uint32_t w,         \
                      uint32_t ws) {                                                                            \
    for (size_t j = 0; j < count; j++) {                                                                        \
        uint32_t r = shoup_lazy((uint32_t)x[j], w, ws, b);                                                      \
        v[j] = r >= b ? r - b : r;                                                                              \
    }                                                                                                           \
}

// α_j = round(Σ_i v_i[j] / b_i) over the `ls` rows of `v` (`count` words apart), summed in double precision in
// the order i = 0, 1, …: α ≤ ls, as each v_i / b_i < 1.
static void alpha_portable(uint32_t *restrict alpha, const uint32_t *restrict v, size_t count, size_t ls,
                           const double *restrict recip) {
    for (size_t j = 0; j < count; j++) {
        double sum = (double)v[j] * recip[0];
        for (size_t i = 1; i < ls; i++) {
            const double d = (double)v[i * count + j] * recip[i];
            sum = sum + d;
        }
        alpha[j] = (uint32_t)(sum + 0.5);
    }
}

#define CV_CONVERT_PASS2(NAME, ATTR, OUT_T)                                                                     \
ATTR static void NAME(OUT_T *restrict out, const uint32_t *restrict v, const uint32_t *restrict alpha,           \
                      uint32_t *restrict acc, size_t count, size_t ls, uint32_t m, const uint32_t *restrict w,   \
                      const uint32_t *restrict ws, const uint32_t *restrict correction) {                       \
    const uint32_t two_m = 2 * m;                                                                               \
    for (size_t j = 0; j < count; j++) acc[j] = 0;                                                              \
    for (size_t i = 0; i < ls; i++) {                                                                           \
        const uint32_t wi = w[i], wsi = ws[i];                                                                  \
        const uint32_t *restrict vi = v + i * count;                                                            \
        for (size_t j = 0; j < count; j++) {                                                                    \
            uint32_t x = acc[j] + shoup_lazy(vi[j], wi, wsi, m);                                                \
            acc[j] = x >= two_m ? x - two_m : x;                                                                \
        }                                                                                                       \
    }                                                                                                           \
    for (size_t j = 0; j < count; j++) {                                                                        \
        uint32_t x = acc[j] >= m ? acc[j] - m : acc[j];                                                         \
        uint32_t c = correction[alpha[j]];                                                                      \
        out[j] = x >= c ? x - c : x + m - c;                                                                    \
    }                                                                                                           \
}

CV_CONVERT_PASS1(pass1_u64_portable, , uint64_t)
CV_CONVERT_PASS1(pass1_u32_portable, , uint32_t)
CV_CONVERT_PASS2(pass2_u64_portable, , uint64_t)
CV_CONVERT_PASS2(pass2_u32_portable, , uint32_t)
#if defined(__x86_64__)
#include "Lanes32.h"
#define AVX512DQ __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))
CV_CONVERT_PASS1(pass1_u64_avx512, AVX512DQ, uint64_t)
CV_CONVERT_PASS2(pass2_u64_avx512, AVX512DQ, uint64_t)

// The 32-bit pass 1 (the ciphertext-product extension's) written with the shared lane helpers: the compiler's
// own vectorization of the 64-bit Shoup products above spends several shuffles per product.
AVX512DQ static void pass1_u32_avx512(uint32_t *restrict v, const uint32_t *restrict x, size_t count, uint32_t b,
                                      uint32_t w, uint32_t ws) {
    if (count % 16) { pass1_u32_portable(v, x, count, b, w, ws); return; }
    const __m512i vb = _mm512_set1_epi32((int)b), vw = _mm512_set1_epi32((int)w), vws = _mm512_set1_epi32((int)ws);
    for (size_t j = 0; j < count; j += 16)
        _mm512_storeu_si512(v + j, vmin_sub(vmul_shoup_lazy(_mm512_loadu_si512(x + j), vw, vws, vb), vb));
}

// α on 16 words at once: the same products and sums in the same order as `alpha_portable`, so the same roundings.
AVX512DQ static void alpha_avx512(uint32_t *restrict alpha, const uint32_t *restrict v, size_t count, size_t ls,
                                  const double *restrict recip) {
    if (count % 16) { alpha_portable(alpha, v, count, ls, recip); return; }
    const __m512d half = _mm512_set1_pd(0.5);
    for (size_t j = 0; j < count; j += 16) {
        __m512d lo = _mm512_setzero_pd(), hi = lo;
        for (size_t i = 0; i < ls; i++) {
            const __m512i r = _mm512_loadu_si512(v + i * count + j);
            const __m512d c = _mm512_set1_pd(recip[i]);
            const __m512d dlo = _mm512_mul_pd(_mm512_cvtepu32_pd(_mm512_castsi512_si256(r)), c);
            const __m512d dhi = _mm512_mul_pd(_mm512_cvtepu32_pd(_mm512_extracti64x4_epi64(r, 1)), c);
            lo = i == 0 ? dlo : _mm512_add_pd(lo, dlo);
            hi = i == 0 ? dhi : _mm512_add_pd(hi, dhi);
        }
        _mm256_storeu_si256((__m256i *)(alpha + j), _mm512_cvttpd_epu32(_mm512_add_pd(lo, half)));
        _mm256_storeu_si256((__m256i *)(alpha + j + 8), _mm512_cvttpd_epu32(_mm512_add_pd(hi, half)));
    }
}

// The sum over the source moduli stays in a register; α ≤ ls < 16 picks its correction by a lane permute.
AVX512DQ static void pass2_u32_avx512(uint32_t *restrict out, const uint32_t *restrict v,
                                      const uint32_t *restrict alpha, uint32_t *restrict acc, size_t count, size_t ls,
                                      uint32_t m, const uint32_t *restrict w, const uint32_t *restrict ws,
                                      const uint32_t *restrict correction) {
    if (count % 16 || ls >= 16) { pass2_u32_portable(out, v, alpha, acc, count, ls, m, w, ws, correction); return; }
    const __m512i vm = _mm512_set1_epi32((int)m), v2m = _mm512_set1_epi32((int)(2 * m));
    const __m512i table = _mm512_maskz_loadu_epi32((__mmask16)((1u << (ls + 1)) - 1), correction);
    for (size_t j = 0; j < count; j += 16) {
        __m512i a = _mm512_setzero_si512();
        for (size_t i = 0; i < ls; i++) {
            const __m512i p = vmul_shoup_lazy(_mm512_loadu_si512(v + i * count + j), _mm512_set1_epi32((int)w[i]),
                                              _mm512_set1_epi32((int)ws[i]), vm);
            a = vmin_sub(_mm512_add_epi32(a, p), v2m);
        }
        a = vmin_sub(a, vm);
        const __m512i c = _mm512_permutexvar_epi32(_mm512_loadu_si512(alpha + j), table);
        _mm512_storeu_si512(out + j, vmin_sub(_mm512_sub_epi32(_mm512_add_epi32(a, vm), c), vm));
    }
}
#define CV_PICK(name) (cv_active_level() >= CV_LEVEL_AVX512 ? name##_avx512 : name##_portable)
#else
#define CV_PICK(name) name##_portable
#endif

// Shared driver: `wide` selects 64-bit input and output words. With `v_ready` the scratch's first `ls` rows
// already hold pass 1's v rows (the extension folds (B/b_i)^{-1} into its inverse transforms) and `in` is unused.
static void convert(void *out, size_t out_stride, const void *in, size_t in_stride, int wide, int v_ready,
                    size_t count, size_t ls, const uint32_t *from, const uint32_t *punct_inv,
                    const uint32_t *punct_inv_shoup, const double *recip, size_t lt, const uint32_t *to,
                    const uint32_t *punct_in_target, const uint32_t *punct_in_target_shoup,
                    const uint32_t *prod_in_target, uint32_t *scratch) {
    uint32_t *v = scratch, *alpha = scratch + ls * count, *acc = alpha + count;
    for (size_t i = 0; i < ls && !v_ready; i++) {
        if (wide)
            CV_PICK(pass1_u64)(v + i * count, (const uint64_t *)in + i * in_stride, count, from[i], punct_inv[i],
                               punct_inv_shoup[i]);
        else
            CV_PICK(pass1_u32)(v + i * count, (const uint32_t *)in + i * in_stride, count, from[i], punct_inv[i],
                               punct_inv_shoup[i]);
    }
    CV_PICK(alpha)(alpha, v, count, ls, recip);
    // α ≤ ls (each v_i / b_i < 1), so α·[B]_m comes from a table of ls + 1 entries.
    uint32_t correction[65];
    for (size_t k = 0; k < lt; k++) {
        for (size_t a = 0; a <= ls && a < 65; a++) correction[a] = (uint32_t)(((uint64_t)a * prod_in_target[k]) % to[k]);
        if (wide)
            CV_PICK(pass2_u64)((uint64_t *)out + k * out_stride, v, alpha, acc, count, ls, to[k],
                               punct_in_target + k * ls, punct_in_target_shoup + k * ls, correction);
        else
            CV_PICK(pass2_u32)((uint32_t *)out + k * out_stride, v, alpha, acc, count, ls, to[k],
                               punct_in_target + k * ls, punct_in_target_shoup + k * ls, correction);
    }
}

void cv_convert_centered32(uint64_t *out, size_t out_stride, const uint64_t *in, size_t in_stride, size_t count,
                           size_t ls, const uint32_t *from, const uint32_t *punct_inv,
                           const uint32_t *punct_inv_shoup, const double *recip,
                           size_t lt, const uint32_t *to, const uint32_t *punct_in_target,
                           const uint32_t *punct_in_target_shoup, const uint32_t *prod_in_target,
                           uint32_t *scratch) {
    convert(out, out_stride, in, in_stride, 1, 0, count, ls, from, punct_inv, punct_inv_shoup, recip, lt, to,
            punct_in_target, punct_in_target_shoup, prod_in_target, scratch);
}

size_t cv_extend_scratch(const cv_extend_params *pp) {
    // Truncated 64-bit coefficient rows over Q, then the conversion's v rows, α and accumulator.
    return pp->lq * pp->n + (pp->lq + 2) * pp->n;
}

// The extension of `in` (over Q) to Q ∪ P: the Q rows in evaluation form into `out_q` unless it is NULL, the P
// rows into `out_p`. An evaluation-form input's inverse transforms are scaled by n^{-1}·(B/b_r)^{-1} at once,
// which gives the conversion's v rows without a pass of their own.
static void extend32(uint32_t *out_q, uint32_t *out_p, const void *in, int in_wide, int in_eval,
                     const cv_extend_params *pp, uint32_t *scratch) {
    const size_t n = pp->n, lq = pp->lq, lp = pp->lp;
    uint32_t *coeff = scratch;
    uint32_t *conv = scratch + lq * n;
    const void *source = in;
    for (size_t r = 0; r < lq; r++) {
        uint32_t *o = out_q ? out_q + r * n : 0;
        const uint32_t q = pp->moduli[r];
        const uint32_t *src = (const uint32_t *)in + r * n;
        if (in_wide) {
            // The low words of the 64-bit residues: the v row itself for an evaluation-form input (transformed in
            // place below), else a coefficient row for pass 1.
            uint32_t *c = in_eval ? conv + r * n : coeff + r * n;
            const uint64_t *wide = (const uint64_t *)in + r * n;
            for (size_t j = 0; j < n; j++) c[j] = (uint32_t)wide[j];
            src = c;
        }
        if (in_eval) {
            if (o) memcpy(o, src, n * sizeof(uint32_t));
            const uint32_t scale = (uint32_t)((uint64_t)pp->inv_n[r] * pp->punct_inv[r] % q);
            const uint32_t scale_shoup = (uint32_t)(((uint64_t)scale << 32) / q);
            cv_ntt32_inverse_to(conv + r * n, src, n, pp->inv[r], pp->inv_shoup[r], q, scale, scale_shoup);
        } else if (o) {
            cv_ntt32_forward_to(o, src, n, pp->fwd[r], pp->fwd_shoup[r], q);
        }
    }
    if (in_wide && !in_eval) source = coeff;
    convert(out_p, n, source, n, 0, in_eval, n, lq, pp->moduli, pp->punct_inv, pp->punct_inv_shoup, pp->recip, lp,
            pp->moduli + lq, pp->punct_in_target, pp->punct_in_target_shoup, pp->prod_in_target, conv);
    for (size_t k = 0; k < lp; k++) {
        const size_t r = lq + k;
        cv_ntt32_forward(out_p + k * n, n, pp->fwd[r], pp->fwd_shoup[r], pp->moduli[r]);
    }
}

void cv_extend32(uint32_t *out, const void *in, int in_wide, int in_eval, const cv_extend_params *pp,
                 uint32_t *scratch) {
    extend32(out, out + pp->lq * pp->n, in, in_wide, in_eval, pp, scratch);
}

void cv_extend32_p(uint32_t *out_p, const uint32_t *in, int in_eval, const cv_extend_params *pp, uint32_t *scratch) {
    extend32(0, out_p, in, 0, in_eval, pp, scratch);
}
