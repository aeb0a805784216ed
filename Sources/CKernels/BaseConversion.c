// Centred RNS base conversion on 32-bit residues: pass 1 computes v_i = [x_i·(B/b_i)^{-1}]_{b_i} and the
// correction α = round(Σ v_i / b_i); pass 2 forms Σ v_i·[B/b_i]_m − α·[B]_m for each target m with Shoup
// products kept below 2m. Same results as `BaseConverter.convertCentered`.
#include "CKernels.h"

static inline uint32_t shoup_lazy(uint32_t v, uint32_t w, uint32_t ws, uint32_t q) {
    uint32_t qhat = (uint32_t)(((uint64_t)v * ws) >> 32);
    return v * w - qhat * q;
}

#define CV_CONVERT_PASS1(NAME, ATTR)                                                                            \
ATTR static void NAME(uint32_t *restrict v, double *restrict sum, const uint64_t *restrict x, size_t count,      \
                      uint32_t b, uint32_t w, uint32_t ws, double recip, int first) {                            \
    for (size_t j = 0; j < count; j++) {                                                                        \
        uint32_t r = shoup_lazy((uint32_t)x[j], w, ws, b);                                                      \
        r = r >= b ? r - b : r;                                                                                 \
        v[j] = r;                                                                                               \
        double d = (double)r * recip;                                                                           \
        sum[j] = first ? d : sum[j] + d;                                                                        \
    }                                                                                                           \
}

#define CV_CONVERT_PASS2(NAME, ATTR)                                                                            \
ATTR static void NAME(uint64_t *restrict out, const uint32_t *restrict v, const uint32_t *restrict alpha,        \
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

CV_CONVERT_PASS1(pass1_portable, )
CV_CONVERT_PASS2(pass2_portable, )
#if defined(__x86_64__)
#define AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))
CV_CONVERT_PASS1(pass1_avx512, AVX512)
CV_CONVERT_PASS2(pass2_avx512, AVX512)
#define CV_PICK(name) (cv_active_level() >= CV_LEVEL_AVX512 ? name##_avx512 : name##_portable)
#else
#define CV_PICK(name) name##_portable
#endif

void cv_convert_centered32(uint64_t *out, size_t out_stride, const uint64_t *in, size_t in_stride, size_t count,
                           size_t ls, const uint32_t *from, const uint32_t *punct_inv,
                           const uint32_t *punct_inv_shoup, const double *recip,
                           size_t lt, const uint32_t *to, const uint32_t *punct_in_target,
                           const uint32_t *punct_in_target_shoup, const uint32_t *prod_in_target,
                           uint32_t *scratch) {
    uint32_t *v = scratch, *alpha = scratch + ls * count;
    // α sums in doubles, kept in the output's first row while pass 1 runs (count doubles = count words of 64 bits).
    double *sum = (double *)out;
    void (*p1)(uint32_t *, double *, const uint64_t *, size_t, uint32_t, uint32_t, uint32_t, double, int) =
        CV_PICK(pass1);
    for (size_t i = 0; i < ls; i++)
        p1(v + i * count, sum, in + i * in_stride, count, from[i], punct_inv[i], punct_inv_shoup[i], recip[i], i == 0);
    for (size_t j = 0; j < count; j++) alpha[j] = (uint32_t)(sum[j] + 0.5);
    void (*p2)(uint64_t *, const uint32_t *, const uint32_t *, uint32_t *, size_t, size_t, uint32_t,
               const uint32_t *, const uint32_t *, const uint32_t *) = CV_PICK(pass2);
    uint32_t *acc = alpha + count;
    // α ≤ ls (each v_i / b_i < 1), so α·[B]_m comes from a table of ls + 1 entries.
    uint32_t correction[65];
    for (size_t k = 0; k < lt; k++) {
        for (size_t a = 0; a <= ls && a < 65; a++) correction[a] = (uint32_t)(((uint64_t)a * prod_in_target[k]) % to[k]);
        p2(out + k * out_stride, v, alpha, acc, count, ls, to[k], punct_in_target + k * ls, punct_in_target_shoup + k * ls,
           correction);
    }
}
