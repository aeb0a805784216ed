// Galois automorphism and key switching on 32-bit residues, fused so a query-expansion node costs its NTTs and
// a few linear passes, with no allocation: the same arithmetic as `Context.keySwitch`, word for word.
#include "CKernels.h"

#include <string.h>

static inline uint32_t reduce_small(uint32_t x, uint32_t m, uint64_t barrett32) {
    uint32_t qhat = (uint32_t)(((uint64_t)x * barrett32) >> 32);
    uint32_t r = x - qhat * m;
    return r >= m ? r - m : r;
}

size_t cv_keyswitch_scratch32(const cv_keyswitch_params *pp) { return (5 * pp->l + 2) * pp->n; }

void cv_galois_table(uint32_t *table, size_t n, size_t galois_element) {
    const size_t mask = 2 * n - 1;
    size_t e = 0;
    for (size_t i = 0; i < n; i++) {
        if (e < n) table[e] = (uint32_t)i; else table[e - n] = (uint32_t)i | 0x80000000u;
        e = (e + galois_element) & mask;
    }
}

// Lane loops are written once and compiled twice: for the baseline target and for AVX-512F.
static inline uint32_t shoup_lazy(uint32_t v, uint32_t w, uint32_t ws, uint32_t q) {
    uint32_t qhat = (uint32_t)(((uint64_t)v * ws) >> 32);
    return v * w - qhat * q;
}

// (x_p + ⌊p/2⌋) mod p, reduced mod q: the rounding term of the division by the special modulus.
static inline uint32_t special_residue(uint32_t xp, uint32_t p, uint32_t half, uint32_t q, uint64_t q_barrett32) {
    uint32_t y = xp + half;
    y = y >= p ? y - p : y;
    return reduce_small(y, q, q_barrett32);
}

// v · p^{-1} mod q, fully reduced, plus `add` (below q) when given.
static inline uint32_t times_p_inverse(uint32_t v, uint32_t q, uint32_t p_inv, uint32_t p_inv_shoup,
                                       const uint32_t *add) {
    uint32_t r = shoup_lazy(v, p_inv, p_inv_shoup, q);
    r = r >= q ? r - q : r;
    if (add) {
        r += *add;
        r = r >= q ? r - q : r;
    }
    return r;
}

// Barrett reduction of a sum of products x < 2^(b+31) for a b-bit m: q̂ = ⌊⌊x / 2^(b−1)⌋ · ⌊2^(b+31) / m⌋ / 2^32⌋
// is within 2 of ⌊x / m⌋, and two conditional subtractions finish. The vector kernel computes the same.
static inline uint32_t reduce_wide(uint64_t x, int b, uint64_t mu, uint32_t m) {
    const uint64_t qhat = ((x >> (b - 1)) * mu) >> 32;
    uint32_t r = (uint32_t)(x - qhat * m);
    r = r >= 2 * m ? r - 2 * m : r;
    return r >= m ? r - m : r;
}

// a0 = Σ_j d_j ⊙ k0_j and a1 = Σ_j d_j ⊙ k1_j (mod m, fully reduced) over the l digits: the products summed in
// 64 bits and reduced once, so the key is read without Shoup quotients and each output row is written once.
// Two digits (every Live Caller ID preset) get a loop of their own, which the compiler vectorizes; more digits
// than the Barrett bound allows are reduced every eight products (below 2^63 for moduli below 2^30).
static void digit_products_portable(uint32_t *restrict a0, uint32_t *restrict a1, const uint32_t *const *d,
                                    const uint32_t *const *k0, const uint32_t *const *k1, size_t l, size_t n,
                                    uint32_t m) {
    const int b = 32 - __builtin_clz(m);
    const uint64_t mu = (1ull << (b + 31)) / m;
    if (l == 2 && b <= 30) {
        const uint32_t *restrict d0 = d[0], *restrict d1 = d[1];
        const uint32_t *restrict x0 = k0[0], *restrict x1 = k0[1], *restrict y0 = k1[0], *restrict y1 = k1[1];
        for (size_t i = 0; i < n; i++) {
            a0[i] = reduce_wide((uint64_t)d0[i] * x0[i] + (uint64_t)d1[i] * x1[i], b, mu, m);
            a1[i] = reduce_wide((uint64_t)d0[i] * y0[i] + (uint64_t)d1[i] * y1[i], b, mu, m);
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t x0 = 0, x1 = 0;
        for (size_t j = 0; j < l; j++) {
            x0 += (uint64_t)d[j][i] * k0[j][i];
            x1 += (uint64_t)d[j][i] * k1[j][i];
            if ((j & 7) == 7) { x0 %= m; x1 %= m; }
        }
        a0[i] = (uint32_t)(x0 % m);
        a1[i] = (uint32_t)(x1 % m);
    }
}

// σ_g through a precomputed gather table: out[j] = ±in[table[j] & 0x7fffffff], negated when the top bit is set.
#define CV_GALOIS(NAME, ATTR)                                                                                   \
ATTR static void NAME(uint32_t *restrict out, const uint32_t *restrict in, const uint32_t *restrict table,       \
                      size_t n, uint32_t q) {                                                                   \
    for (size_t j = 0; j < n; j++) {                                                                            \
        uint32_t t = table[j];                                                                                  \
        uint32_t v = in[t & 0x7fffffffu];                                                                       \
        uint32_t neg = v == 0 ? 0 : q - v;                                                                      \
        out[j] = (t >> 31) ? neg : v;                                                                           \
    }                                                                                                           \
}

#define CV_DROP_SPECIAL(NAME, ATTR)                                                                             \
ATTR static void NAME(uint32_t *restrict out, const uint32_t *restrict x, const uint32_t *restrict xp,           \
                      const uint32_t *restrict add, size_t n, uint32_t q, uint64_t q_barrett32, uint32_t p,       \
                      uint32_t half, uint32_t half_q, uint32_t p_inv, uint32_t p_inv_shoup) {                    \
    for (size_t j = 0; j < n; j++) {                                                                            \
        uint32_t ym = special_residue(xp[j], p, half, q, q_barrett32);                                          \
        uint32_t v = x[j] + half_q;                                                                             \
        v = v >= q ? v - q : v;                                                                                 \
        v = v >= ym ? v - ym : v + q - ym;                                                                      \
        out[j] = times_p_inverse(v, q, p_inv, p_inv_shoup, add ? add + j : 0);                                  \
    }                                                                                                           \
}

#define CV_COMBINE(NAME, ATTR)                                                                                  \
ATTR static void NAME(uint32_t *restrict even, uint32_t *restrict odd, const uint32_t *restrict c,               \
                      const uint32_t *restrict r, size_t n, uint32_t q, size_t shift) {                          \
    for (size_t j = 0; j < n; j++) {                                                                            \
        uint32_t s = c[j] + r[j];                                                                               \
        even[j] = s >= q ? s - q : s;                                                                           \
    }                                                                                                           \
    /* (c − r)·x^{−shift}: coefficient j moves to j − shift, negated when it wraps. */                          \
    for (size_t j = shift; j < n; j++) {                                                                        \
        uint32_t d = c[j] >= r[j] ? c[j] - r[j] : c[j] + q - r[j];                                               \
        odd[j - shift] = d;                                                                                     \
    }                                                                                                           \
    for (size_t j = 0; j < shift; j++) {                                                                        \
        uint32_t d = c[j] >= r[j] ? c[j] - r[j] : c[j] + q - r[j];                                               \
        odd[j + n - shift] = d == 0 ? 0 : q - d;                                                                \
    }                                                                                                           \
}

// out[j] = in[perm[j]]: σ_g on evaluation-form words is a permutation of the evaluation points.
#define CV_PERMUTE(NAME, ATTR)                                                                                  \
ATTR static void NAME(uint32_t *restrict out, const uint32_t *restrict in, const uint32_t *restrict perm,        \
                      size_t n) {                                                                               \
    for (size_t j = 0; j < n; j++) out[j] = in[perm[j]];                                                        \
}

// The rounding correction of the division by p, coefficient form: z = half_q − ((x_p + ⌊p/2⌋) mod p mod q),
// mod q. Added to x_i in evaluation form, it gives the coefficient-form `drop_special` after the transform.
#define CV_DROP_CORRECTION(NAME, ATTR)                                                                          \
ATTR static void NAME(uint32_t *restrict z, const uint32_t *restrict xp, size_t n, uint32_t q,                   \
                      uint64_t q_barrett32, uint32_t p, uint32_t half, uint32_t half_q) {                       \
    for (size_t j = 0; j < n; j++) {                                                                            \
        uint32_t ym = special_residue(xp[j], p, half, q, q_barrett32);                                          \
        z[j] = half_q >= ym ? half_q - ym : half_q + q - ym;                                                    \
    }                                                                                                           \
}

// Evaluation form: out = ((x + z) · p^{-1} mod q) (+ rot[perm] when rot is given), fully reduced; x below 2q,
// z below q.
#define CV_DROP_EVAL(NAME, ATTR)                                                                                \
ATTR static void NAME(uint32_t *restrict out, const uint32_t *restrict x, const uint32_t *restrict z,            \
                      const uint32_t *restrict rot, const uint32_t *restrict perm, size_t n, uint32_t q,         \
                      uint32_t p_inv, uint32_t p_inv_shoup) {                                                   \
    for (size_t j = 0; j < n; j++) {                                                                            \
        out[j] = times_p_inverse(x[j] + z[j], q, p_inv, p_inv_shoup, rot ? rot + perm[j] : 0);                  \
    }                                                                                                           \
}

// Evaluation form split in place: c ← c + r (the even half), r ← (c − r) ⊙ mono (the odd half; mono is the
// transform of x^{−shift}), fully reduced. In place, the split writes only buffers the key switch just touched.
#define CV_COMBINE_EVAL(NAME, ATTR)                                                                             \
ATTR static void NAME(uint32_t *even, uint32_t *odd, const uint32_t *c, const uint32_t *r,                        \
                      const uint32_t *restrict mono, const uint32_t *restrict mono_shoup, size_t n, uint32_t q) { \
    for (size_t j = 0; j < n; j++) {                                                                            \
        const uint32_t cj = c[j], rj = r[j];                                                                    \
        uint32_t s = cj + rj;                                                                                   \
        uint32_t d = cj >= rj ? cj - rj : cj + q - rj;                                                          \
        uint32_t qhat = (uint32_t)(((uint64_t)d * mono_shoup[j]) >> 32);                                        \
        uint32_t o = d * mono[j] - qhat * q;                                                                    \
        even[j] = s >= q ? s - q : s;                                                                           \
        odd[j] = o >= q ? o - q : o;                                                                            \
    }                                                                                                           \
}

CV_GALOIS(galois_portable, )
CV_DROP_SPECIAL(drop_special_portable, )
CV_COMBINE(combine_portable, )
CV_PERMUTE(permute_portable, )
CV_DROP_CORRECTION(drop_correction_portable, )
CV_DROP_EVAL(drop_eval_portable, )
CV_COMBINE_EVAL(combine_eval_portable, )

#if defined(__x86_64__)
#include "Lanes32.h"

// The digit products with 64-bit lane sums: vpmuludq on the even lanes and on the odd lanes swapped down, and the
// Barrett reduction of `reduce_wide` per lane, valid while x < 2^(b+31), which l · m² below it guarantees. Four
// multiplies per 16 lanes and digit against six for a Shoup product, and half the key bytes.
AVX512 static inline __m512i vreduce_wide(__m512i x, __m128i shift, __m512i mu, __m512i vm) {
    const __m512i qhat = _mm512_srli_epi64(_mm512_mul_epu32(_mm512_srl_epi64(x, shift), mu), 32);
    return _mm512_sub_epi64(x, _mm512_mul_epu32(qhat, vm));
}

AVX512 static void digit_products_avx512(uint32_t *restrict a0, uint32_t *restrict a1, const uint32_t *const *d,
                                         const uint32_t *const *k0, const uint32_t *const *k1, size_t l, size_t n,
                                         uint32_t m) {
    const int b = 32 - __builtin_clz(m);
    if ((uint64_t)l > (1ull << (31 - b))) {
        digit_products_portable(a0, a1, d, k0, k1, l, n, m);
        return;
    }
    const __m512i vm = _mm512_set1_epi32((int)m), v2m = _mm512_set1_epi32((int)(2 * m));
    const __m512i mu = _mm512_set1_epi64((long long)((1ull << (b + 31)) / m));
    const __m128i shift = _mm_cvtsi32_si128(b - 1);
    for (size_t i = 0; i < n; i += 16) {
        __m512i e0 = _mm512_setzero_si512(), o0 = e0, e1 = e0, o1 = e0;
        for (size_t j = 0; j < l; j++) {
            const __m512i v = _mm512_loadu_si512(d[j] + i), vo = _mm512_shuffle_epi32(v, _MM_PERM_CDAB);
            const __m512i x = _mm512_loadu_si512(k0[j] + i), y = _mm512_loadu_si512(k1[j] + i);
            e0 = _mm512_add_epi64(e0, _mm512_mul_epu32(v, x));
            o0 = _mm512_add_epi64(o0, _mm512_mul_epu32(vo, _mm512_shuffle_epi32(x, _MM_PERM_CDAB)));
            e1 = _mm512_add_epi64(e1, _mm512_mul_epu32(v, y));
            o1 = _mm512_add_epi64(o1, _mm512_mul_epu32(vo, _mm512_shuffle_epi32(y, _MM_PERM_CDAB)));
        }
        // Remainders below 3m < 2^32: the odd lanes' move back up into the high halves, then two conditional
        // subtractions.
        __m512i r0 = _mm512_mask_shuffle_epi32(vreduce_wide(e0, shift, mu, vm), 0xAAAA,
                                               vreduce_wide(o0, shift, mu, vm), _MM_PERM_CDAB);
        __m512i r1 = _mm512_mask_shuffle_epi32(vreduce_wide(e1, shift, mu, vm), 0xAAAA,
                                               vreduce_wide(o1, shift, mu, vm), _MM_PERM_CDAB);
        _mm512_storeu_si512(a0 + i, vmin_sub(vmin_sub(r0, v2m), vm));
        _mm512_storeu_si512(a1 + i, vmin_sub(vmin_sub(r1, v2m), vm));
    }
}

// Each word of `c` and `r` is read before `even` and `odd` are written at that index, so the outputs may be the
// inputs themselves (the split in place) or other buffers (the last split, straight into the leaves).
AVX512 static void combine_eval_avx512(uint32_t *even, uint32_t *odd, const uint32_t *c, const uint32_t *r,
                                       const uint32_t *restrict mono, const uint32_t *restrict mono_shoup, size_t n,
                                       uint32_t q) {
    const __m512i vq = _mm512_set1_epi32((int)q);
    for (size_t j = 0; j < n; j += 16) {
        const __m512i cv = _mm512_loadu_si512(c + j), rv = _mm512_loadu_si512(r + j);
        const __m512i d = vmin_sub(_mm512_sub_epi32(_mm512_add_epi32(cv, vq), rv), vq);
        const __m512i o = vmul_shoup_lazy(d, _mm512_loadu_si512(mono + j), _mm512_loadu_si512(mono_shoup + j), vq);
        _mm512_storeu_si512(even + j, vmin_sub(_mm512_add_epi32(cv, rv), vq));
        _mm512_storeu_si512(odd + j, vmin_sub(o, vq));
    }
}

CV_GALOIS(galois_avx512, AVX512)
CV_DROP_SPECIAL(drop_special_avx512, AVX512)
CV_COMBINE(combine_avx512, AVX512)
CV_PERMUTE(permute_avx512, AVX512)
CV_DROP_CORRECTION(drop_correction_wide_avx512, AVX512)
CV_DROP_EVAL(drop_eval_auto_avx512, AVX512)

// `drop_correction` in lanes when p < 4q (every Live Caller ID preset): (x_p + ⌊p/2⌋) mod p is below 4q, so its
// residue mod q takes two conditional subtractions instead of a Barrett product in 64-bit lanes.
AVX512 static void drop_correction_avx512(uint32_t *restrict z, const uint32_t *restrict xp, size_t n, uint32_t q,
                                          uint64_t q_barrett32, uint32_t p, uint32_t half, uint32_t half_q) {
    if ((uint64_t)p > 4 * (uint64_t)q || n % 16 != 0) {
        drop_correction_wide_avx512(z, xp, n, q, q_barrett32, p, half, half_q);
        return;
    }
    const __m512i vq = _mm512_set1_epi32((int)q), v2q = _mm512_set1_epi32((int)(2 * q));
    const __m512i vp = _mm512_set1_epi32((int)p), vhalf = _mm512_set1_epi32((int)half);
    const __m512i top = _mm512_set1_epi32((int)(half_q + q));
    for (size_t j = 0; j < n; j += 16) {
        const __m512i y = vmin_sub(_mm512_add_epi32(_mm512_loadu_si512(xp + j), vhalf), vp);
        const __m512i ym = vmin_sub(vmin_sub(y, v2q), vq);
        _mm512_storeu_si512(z + j, vmin_sub(_mm512_sub_epi32(top, ym), vq));
    }
}

// `drop_eval` in lanes: the Shoup product by p^{-1} on 16 words at once (the compiler's version widened it to
// 64-bit lanes), and σ(c0)'s words gathered through the permutation.
AVX512 static void drop_eval_avx512(uint32_t *restrict out, const uint32_t *restrict x, const uint32_t *restrict z,
                                    const uint32_t *restrict rot, const uint32_t *restrict perm, size_t n, uint32_t q,
                                    uint32_t p_inv, uint32_t p_inv_shoup) {
    if (n % 16 != 0) {
        drop_eval_auto_avx512(out, x, z, rot, perm, n, q, p_inv, p_inv_shoup);
        return;
    }
    const __m512i vq = _mm512_set1_epi32((int)q);
    const __m512i w = _mm512_set1_epi32((int)p_inv), ws = _mm512_set1_epi32((int)p_inv_shoup);
    for (size_t j = 0; j < n; j += 16) {
        const __m512i v = _mm512_add_epi32(_mm512_loadu_si512(x + j), _mm512_loadu_si512(z + j));
        __m512i r = vmin_sub(vmul_shoup_lazy(v, w, ws, vq), vq);
        if (rot) {
            const __m512i g = _mm512_i32gather_epi32(_mm512_loadu_si512(perm + j), (const void *)rot, 4);
            r = vmin_sub(_mm512_add_epi32(r, g), vq);
        }
        _mm512_storeu_si512(out + j, r);
    }
}
#define CV_PICK(name) (cv_active_level() >= CV_LEVEL_AVX512 ? name##_avx512 : name##_portable)
#else
#define CV_PICK(name) name##_portable
#endif

// The key-switch products of both kernels: for every output modulus k (p last) the l digits (digit j's
// coefficient-form row, reduced into m_k and transformed, into `digit` row j; or `diagonal`'s row j as it is when
// j = k and the caller has it transformed) times the key's rows, into ks's rows (2 × (l + 1), evaluation form,
// fully reduced). `digit` has l rows.
static void keyswitch_products(uint32_t *ks, const uint32_t *digits, const uint32_t *diagonal,
                               const cv_keyswitch_params *pp, const uint32_t *const *key, size_t key_rows,
                               uint32_t *digit) {
    const size_t n = pp->n, l = pp->l;
    void (*products)(uint32_t *, uint32_t *, const uint32_t *const *, const uint32_t *const *,
                     const uint32_t *const *, size_t, size_t, uint32_t) = CV_PICK(digit_products);
    const uint32_t *d[CV_MAX_KEYSWITCH_MODULI], *k0[CV_MAX_KEYSWITCH_MODULI], *k1[CV_MAX_KEYSWITCH_MODULI];
    for (size_t k = 0; k <= l; k++) {
        const size_t key_row = k < l ? k : key_rows - 1;
        const uint32_t m = pp->moduli[k];
        for (size_t j = 0; j < l; j++) {
            k0[j] = key[j] + key_row * n;
            k1[j] = key[j] + (key_rows + key_row) * n;
            if (diagonal && j == k) {
                d[j] = diagonal + j * n;
                continue;
            }
            uint32_t *row = digit + j * n;
            const uint32_t *src = digits + j * n;
            // The forward NTT takes any input below 4m (its first butterfly reduces below 2m), so a digit
            // from a modulus below 4m needs no reduction and is transformed straight from where it is.
            if ((uint64_t)pp->moduli[j] >= 4 * (uint64_t)m) {
                for (size_t i = 0; i < n; i++) row[i] = reduce_small(src[i], m, pp->barrett32[k]);
                cv_ntt32_forward(row, n, pp->fwd[k], pp->fwd_shoup[k], m);
            } else {
                cv_ntt32_forward_to(row, src, n, pp->fwd[k], pp->fwd_shoup[k], m);
            }
            d[j] = row;
        }
        products(ks + k * n, ks + (l + 1 + k) * n, d, k0, k1, l, n, m);
    }
}

void cv_galois_keyswitch32(uint32_t *out, const uint32_t *in, size_t galois_element, const uint32_t *galois_table,
                           const cv_keyswitch_params *pp, const uint32_t *const *key, size_t key_rows,
                           uint32_t *scratch32) {
    const size_t n = pp->n, l = pp->l, two_n = 2 * n, mask = two_n - 1;
    uint32_t *rot0 = scratch32;                 // σ(c0), l rows
    uint32_t *rot1 = scratch32 + l * n;         // σ(c1), l rows
    uint32_t *ks = rot1 + l * n;                // key-switch output: 2 × (l + 1) rows
    uint32_t *digit = ks + 2 * (l + 1) * n;     // the digit rows, l of them
    // σ_g on both polynomials: coefficient i goes to i·g mod 2n, negated past n.
    void (*galois)(uint32_t *, const uint32_t *, const uint32_t *, size_t, uint32_t) = CV_PICK(galois);
    for (size_t poly = 0; poly < 2 && galois_table; poly++) {
        uint32_t *dst = poly == 0 ? rot0 : rot1;
        for (size_t row = 0; row < l; row++)
            galois(dst + row * n, in + (poly * l + row) * n, galois_table, n, pp->moduli[row]);
    }
    for (size_t poly = 0; poly < 2 && !galois_table; poly++) {
        uint32_t *dst = poly == 0 ? rot0 : rot1;
        for (size_t row = 0; row < l; row++) {
            const uint32_t q = pp->moduli[row];
            const uint32_t *src = in + (poly * l + row) * n;
            uint32_t *d = dst + row * n;
            size_t e = 0;
            for (size_t i = 0; i < n; i++) {
                uint32_t v = src[i];
                if (e < n) d[e] = v; else d[e - n] = v == 0 ? 0 : q - v;
                e = (e + galois_element) & mask;
            }
        }
    }
    keyswitch_products(ks, rot1, 0, pp, key, key_rows, digit);
    for (size_t k = 0; k <= l; k++) {
        for (size_t poly = 0; poly < 2; poly++) {
            cv_ntt32_inverse(ks + (poly * (l + 1) + k) * n, n, pp->inv[k], pp->inv_shoup[k], pp->moduli[k],
                             pp->inv_n[k], pp->inv_n_shoup[k]);
        }
    }
    // Divide by p with rounding; c0 gains σ(c0).
    void (*drop)(uint32_t *, const uint32_t *, const uint32_t *, const uint32_t *, size_t, uint32_t, uint64_t,
                 uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) = CV_PICK(drop_special);
    const uint32_t p = pp->moduli[l];
    for (size_t poly = 0; poly < 2; poly++) {
        const uint32_t *x = ks + poly * (l + 1) * n;
        for (size_t i = 0; i < l; i++) {
            drop(out + (poly * l + i) * n, x + i * n, x + l * n, poly == 0 ? rot0 + i * n : 0, n,
                 pp->moduli[i], pp->barrett32[i], p, p / 2, pp->half_mod_q[i], pp->p_inv[i], pp->p_inv_shoup[i]);
        }
    }
}

void cv_expand_combine32(uint32_t *even, uint32_t *odd, const uint32_t *c, const uint32_t *r, size_t n, size_t l,
                         const uint32_t *moduli, size_t shift) {
    void (*combine)(uint32_t *, uint32_t *, const uint32_t *, const uint32_t *, size_t, uint32_t, size_t) =
        CV_PICK(combine);
    for (size_t poly = 0; poly < 2; poly++) {
        for (size_t row = 0; row < l; row++) {
            const size_t o = (poly * l + row) * n;
            combine(even + o, odd + o, c + o, r + o, n, moduli[row], shift);
        }
    }
}

void cv_galois_keyswitch32_eval(uint32_t *out, const uint32_t *in, const uint32_t *perm,
                                const cv_keyswitch_params *pp, const uint32_t *const *key, size_t key_rows,
                                uint32_t *scratch32) {
    const size_t n = pp->n, l = pp->l;
    uint32_t *rot1 = scratch32;                 // σ(c1), evaluation form, l rows
    uint32_t *coef = rot1 + l * n;              // σ(c1), coefficient form: the digits, l rows
    uint32_t *ks = coef + l * n;                // key-switch output: 2 × (l + 1) rows
    uint32_t *digit = ks + 2 * (l + 1) * n;     // the digit rows (l), then one correction row
    void (*permute)(uint32_t *, const uint32_t *, const uint32_t *, size_t) = CV_PICK(permute);
    for (size_t j = 0; j < l; j++) {
        permute(rot1 + j * n, in + (l + j) * n, perm, n);
        cv_ntt32_inverse_to(coef + j * n, rot1 + j * n, n, pp->inv[j], pp->inv_shoup[j], pp->moduli[j], pp->inv_n[j],
                            pp->inv_n_shoup[j]);
    }
    keyswitch_products(ks, coef, rot1, pp, key, key_rows, digit);
    // Divide by p with rounding: the p rows to coefficient form, their corrections to each q_i's evaluation form;
    // c0 gains σ(c0), permuted on the way.
    void (*correction)(uint32_t *, const uint32_t *, size_t, uint32_t, uint64_t, uint32_t, uint32_t, uint32_t) =
        CV_PICK(drop_correction);
    void (*drop)(uint32_t *, const uint32_t *, const uint32_t *, const uint32_t *, const uint32_t *, size_t, uint32_t,
                 uint32_t, uint32_t) = CV_PICK(drop_eval);
    const uint32_t p = pp->moduli[l];
    for (size_t poly = 0; poly < 2; poly++) {
        uint32_t *x = ks + poly * (l + 1) * n;
        cv_ntt32_inverse(x + l * n, n, pp->inv[l], pp->inv_shoup[l], p, pp->inv_n[l], pp->inv_n_shoup[l]);
        for (size_t i = 0; i < l; i++) {
            correction(digit, x + l * n, n, pp->moduli[i], pp->barrett32[i], p, p / 2, pp->half_mod_q[i]);
            cv_ntt32_forward(digit, n, pp->fwd[i], pp->fwd_shoup[i], pp->moduli[i]);
            drop(out + (poly * l + i) * n, x + i * n, digit, poly == 0 ? in + i * n : 0, perm, n, pp->moduli[i],
                 pp->p_inv[i], pp->p_inv_shoup[i]);
        }
    }
}

void cv_expand_combine32_eval(uint32_t *even, uint32_t *odd, const uint32_t *c, const uint32_t *r, size_t n, size_t l,
                              const uint32_t *moduli, const uint32_t *mono, const uint32_t *mono_shoup) {
    void (*combine)(uint32_t *, uint32_t *, const uint32_t *, const uint32_t *, const uint32_t *, const uint32_t *,
                    size_t, uint32_t) = CV_PICK(combine_eval);
    for (size_t poly = 0; poly < 2; poly++) {
        for (size_t row = 0; row < l; row++) {
            const size_t o = (poly * l + row) * n;
            combine(even + o, odd + o, c + o, r + o, mono + row * n, mono_shoup + row * n, n, moduli[row]);
        }
    }
}
