// The two loops of an evaluation key's parse that are ours (the AES-CTR expansion is swift-crypto's): reducing the
// seed's 16-byte draws to residues, and unpacking the bit-packed rows. Both write the 32-bit words the key switch
// reads, with the same values as the engine's 64-bit paths.
#include "CKernels.h"

#include <string.h>

static inline uint64_t load_le64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;  // x86-64 and arm64 are little-endian
}

static inline uint64_t load_be64(const uint8_t *p) { return __builtin_bswap64(load_le64(p)); }

// 2^(32·k) mod q for k = 1, 2, 3, and ⌊(2^64 − 1)/q⌋.
typedef struct {
    uint64_t c1, c2, c3, barrett;
} wide_constants;

static wide_constants wide_constants_for(uint32_t q) {
    wide_constants c;
    c.c1 = (UINT64_C(1) << 32) % q;
    c.c2 = (c.c1 * c.c1) % q;
    c.c3 = (c.c2 * c.c1) % q;
    c.barrett = UINT64_MAX / q;
    return c;
}

// x = l0 + l1·2^32 + l2·2^64 + l3·2^96 ≡ l0 + l1·c1 + l2·c2 + l3·c3 (mod q): below 2^32 + 3·2^62 < 2^64 for q < 2^30.
static inline uint64_t wide_fold(uint64_t lo, uint64_t hi, const wide_constants *c) {
    return (lo & 0xFFFFFFFFu) + (lo >> 32) * c->c1 + (hi & 0xFFFFFFFFu) * c->c2 + (hi >> 32) * c->c3;
}

static void reduce_wide_portable(const uint8_t *restrict bytes, size_t count, uint32_t q, const wide_constants *c,
                                 uint32_t *restrict out) {
    for (size_t i = 0; i < count; i++) {
        const uint64_t s = wide_fold(load_le64(bytes + 16 * i), load_le64(bytes + 16 * i + 8), c);
        // Barrett with ⌊2^64/q⌋: the estimate is the quotient or one less.
        const uint64_t qhat = (uint64_t)(((unsigned __int128)s * c->barrett) >> 64);
        uint64_t r = s - qhat * q;
        if (r >= q) r -= q;
        out[i] = (uint32_t)r;
    }
}

// Unpacks values [from, count) of the big-endian bit stream (`width` ≤ 32 bits each); the index of the first value
// not below q, or `count`.
static size_t unpack_portable(const uint8_t *restrict bytes, size_t total, size_t from, size_t count, unsigned width,
                              uint32_t q, uint32_t *restrict out) {
    const unsigned drop = 64 - width;
    for (size_t i = from; i < count; i++) {
        const size_t bit = i * width, p = bit >> 3;
        uint64_t word;
        if (p + 8 <= total) {
            word = load_be64(bytes + p);
        } else {
            word = 0;
            for (size_t k = 0; k < 8; k++) word = (word << 8) | (p + k < total ? bytes[p + k] : 0);
        }
        const uint64_t v = (word << (bit & 7)) >> drop;
        if (v >= q) return i;
        out[i] = (uint32_t)v;
    }
    return count;
}

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX512DQ __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))

// Eight values at a time. The fold as above; the quotient estimated in double precision, which for q ≥ 2^14 and a
// sum below 2^64 (a quotient below 2^50) is off by at most one either way, so one correction each way is exact.
AVX512DQ static void reduce_wide_avx512(const uint8_t *restrict bytes, size_t count, uint32_t q,
                                        const wide_constants *c, uint32_t *restrict out) {
    const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    const __m512i low32 = _mm512_set1_epi64(0xFFFFFFFF);
    const __m512i c1 = _mm512_set1_epi64((long long)c->c1), c2 = _mm512_set1_epi64((long long)c->c2),
                  c3 = _mm512_set1_epi64((long long)c->c3), vq = _mm512_set1_epi64(q);
    const __m512d inverse = _mm512_set1_pd(1.0 / (double)q);
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        const __m512i a = _mm512_loadu_si512(bytes + 16 * i), b = _mm512_loadu_si512(bytes + 16 * i + 64);
        const __m512i lo = _mm512_permutex2var_epi64(a, even, b), hi = _mm512_permutex2var_epi64(a, odd, b);
        __m512i s = _mm512_and_si512(lo, low32);
        s = _mm512_add_epi64(s, _mm512_mul_epu32(_mm512_srli_epi64(lo, 32), c1));
        s = _mm512_add_epi64(s, _mm512_mul_epu32(hi, c2));
        s = _mm512_add_epi64(s, _mm512_mul_epu32(_mm512_srli_epi64(hi, 32), c3));
        const __m512i qhat = _mm512_cvttpd_epu64(_mm512_mul_pd(_mm512_cvtepu64_pd(s), inverse));
        __m512i r = _mm512_sub_epi64(s, _mm512_mullo_epi64(qhat, vq));
        r = _mm512_mask_add_epi64(r, _mm512_cmplt_epi64_mask(r, _mm512_setzero_si512()), r, vq);
        r = _mm512_mask_sub_epi64(r, _mm512_cmpge_epu64_mask(r, vq), r, vq);
        _mm256_storeu_si256((__m256i *)(out + i), _mm512_cvtepi64_epi32(r));
    }
    reduce_wide_portable(bytes + 16 * i, count - i, q, c, out + i);
}

// Eight values at a time: eight values of `width` bits take exactly `width` bytes, so within a group value j's
// 8-byte window starts at byte ⌊j·width/8⌋ and its bits at bit (j·width) mod 8, the same for every group. Values
// 2k and 2k+1 lie within 16 bytes from value 2k's window, so each 128-bit lane is loaded from there and one in-lane
// byte shuffle forms both windows, byte-swapped (gathers are slow on some processors that have AVX-512).
AVX512DQ static size_t unpack_avx512(const uint8_t *restrict bytes, size_t total, size_t count, unsigned width,
                                     uint32_t q, uint32_t *restrict out) {
    size_t lane_start[4];
    uint8_t pattern[64];
    long long shifts[8];
    for (int k = 0; k < 4; k++) {
        lane_start[k] = (2 * k * width) >> 3;
        for (int half = 0; half < 2; half++) {
            const int j = 2 * k + half;
            const int from = (int)(((j * width) >> 3) - lane_start[k]);
            for (int b = 0; b < 8; b++) pattern[16 * k + 8 * half + b] = (uint8_t)(from + 7 - b);
            shifts[j] = (long long)((j * width) & 7);
        }
    }
    const __m512i swap = _mm512_loadu_si512(pattern), shift = _mm512_loadu_si512(shifts);
    const __m512i vq = _mm512_set1_epi64(q);
    size_t i = 0;
    // A group's last load ends 16 bytes after its fourth lane's start.
    for (; i + 8 <= count && (i / 8) * width + lane_start[3] + 16 <= total; i += 8) {
        const uint8_t *group = bytes + (i / 8) * width;
        __m512i w = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(group + lane_start[0])));
        w = _mm512_inserti32x4(w, _mm_loadu_si128((const __m128i *)(group + lane_start[1])), 1);
        w = _mm512_inserti32x4(w, _mm_loadu_si128((const __m128i *)(group + lane_start[2])), 2);
        w = _mm512_inserti32x4(w, _mm_loadu_si128((const __m128i *)(group + lane_start[3])), 3);
        w = _mm512_shuffle_epi8(w, swap);
        const __m512i v = _mm512_srli_epi64(_mm512_sllv_epi64(w, shift), 64 - width);
        if (_mm512_cmpge_epu64_mask(v, vq)) break;  // the portable loop finds the index
        _mm256_storeu_si256((__m256i *)(out + i), _mm512_cvtepi64_epi32(v));
    }
    return unpack_portable(bytes, total, i, count, width, q, out);
}
#endif

void cv_reduce_wide32(const uint8_t *bytes, size_t count, uint32_t q, uint32_t *out) {
    const wide_constants c = wide_constants_for(q);
#if defined(__x86_64__)
    if (q >= (1u << 14) && cv_active_level() >= CV_LEVEL_AVX512) {
        reduce_wide_avx512(bytes, count, q, &c, out);
        return;
    }
#endif
    reduce_wide_portable(bytes, count, q, &c, out);
}

size_t cv_unpack32(const uint8_t *bytes, size_t total, size_t count, unsigned width, uint32_t q, uint32_t *out) {
#if defined(__x86_64__)
    if (cv_active_level() >= CV_LEVEL_AVX512) return unpack_avx512(bytes, total, count, width, q, out);
#endif
    return unpack_portable(bytes, total, 0, count, width, q, out);
}
