// Hand-vectorized kernels for the BFV engine and the PIR scan, selected at run time by CPU feature.
//
// Each entry point has a portable implementation and, where the CPU offers AVX-512F, a vector one; both give
// identical results. Swift callers pass contiguous buffers and precomputed constants (Shoup quotients,
// Barrett factors); the kernels allocate nothing.
#ifndef CKERNELS_H
#define CKERNELS_H

#include <stddef.h>
#include <stdint.h>

/// Keeps buffers up to 32 MiB in the malloc heap, grows it 64 MiB at a time and keeps up to 1 GiB of freed memory
/// (glibc), so the per-query ciphertext buffers are reused instead of page-faulted in afresh, in one arena for every
/// thread allocating after the call; starts the idle release (`cv_note_activity`). A no-op elsewhere.
void cv_tune_allocator(void);
/// Cores this process may use: its affinity mask and any cgroup CPU quota (rounded up), at most the online cores.
int cv_usable_cores(void);

/// Brackets a large transient build (a shard's evaluation form): between the calls freed memory goes back to the
/// kernel from every arena as it is freed, and the last `cv_transient_end` restores the tuned thresholds and trims;
/// it also counts as activity, so what the caller frees after the build is released once the process is idle.
/// Calls nest and may come from any thread.
void cv_transient_begin(void);
void cv_transient_end(void);

/// Marks allocator work (a query or key job starting or ending). Once tuned, a thread of the allocator's own gives
/// the kept free memory back to the kernel after a quiet time without any (`cv_set_idle_release_ms`): the tuning
/// pays while requests come, and an idle process returns to what it holds.
void cv_note_activity(void);
/// Releases done by that thread so far (tests and metrics).
uint64_t cv_idle_releases(void);
/// The quiet time before a release (default 2000 ms; 0 stops releasing). Returns the previous value.
unsigned cv_set_idle_release_ms(unsigned ms);

/// Asks the kernel to reclaim the clean pages of the program's and its libraries' read-only segments that only this
/// process maps (what starting and the first load touched; serving faults back what it runs). The first idle release
/// does this once. Returns the bytes advised (0 where the kernel lacks `MADV_PAGEOUT` or off Linux).
size_t cv_release_startup_pages(void);
/// Start-up releases done so far (tests and metrics).
uint64_t cv_startup_releases(void);

/// Zeroed memory for a large read-mostly table (the PIR database), backed by transparent huge pages where the
/// kernel allows (fewer TLB misses on the scan); NULL on failure. Free with `cv_huge_free` and the same size.
void *cv_huge_alloc(size_t bytes);

/// Releases memory from `cv_huge_alloc`.
void cv_huge_free(void *p, size_t bytes);

/// Memory for one parsed evaluation key's words, outside the malloc heap: a mapping of its own, faulted in at once,
/// or one an evicted key of the same size left (`cv_key_buffer_free` keeps up to 48 MiB of them). Contents
/// unspecified; NULL on failure. Free with `cv_key_buffer_free` and the same size.
void *cv_key_buffer_alloc(size_t bytes);
/// Returns a key's memory: kept for the next key of the same size while the pool has room, else unmapped.
void cv_key_buffer_free(void *p, size_t bytes);
/// Bytes of kept key memory (tests and metrics).
size_t cv_key_buffer_pooled_bytes(void);
/// Unmaps every kept key buffer (the idle release does this).
void cv_key_buffer_drain(void);

/// Memory for one query's expanded selectors, outside the malloc heap: the smallest kept mapping that holds `bytes`,
/// or a new one on huge pages where the kernel allows, faulted in at once. Sets `*length` to the mapping's length,
/// which `cv_query_buffer_free` takes back. Contents unspecified; NULL on failure.
void *cv_query_buffer_alloc(size_t bytes, size_t *length);
/// Returns a query's memory: kept for a later query while the kept and the in-use mappings together number fewer
/// than the most ever in use at once since the last drain (when that many are kept, the larger of it and the smallest
/// kept one stays), else unmapped. The last one returned while none is in use unmaps every kept one but the largest of
/// them and it, which stays for the grace time (`cv_set_query_keep_ms`) and goes then unless a query took it.
void cv_query_buffer_free(void *p, size_t length);
/// Sets how long the last query mapping returned while none is in use stays for the next query (20 ms by default;
/// 0: unmapped at once); returns the previous value.
unsigned cv_set_query_keep_ms(unsigned ms);
/// Bytes of kept query memory (tests and metrics).
size_t cv_query_buffer_pooled_bytes(void);
/// Unmaps every kept query buffer and starts counting the most in use at once afresh (the idle release does this).
void cv_query_buffer_drain(void);

/// Memory for a request body's ByteBuffer (NIO's custom allocator functions), outside the malloc heap from 128 KiB:
/// a mapping of its own, grown by remapping and unmapped when freed; smaller bodies come from the heap. NULL only
/// where the heap is exhausted.
void *cv_body_allocate(size_t size);
/// Grows or shrinks a body's memory to `new_size`, keeping its first bytes (`old_size` of them at most).
void *cv_body_reallocate(void *p, size_t old_size, size_t new_size);
/// Frees what `cv_body_allocate` or `cv_body_reallocate` returned.
void cv_body_deallocate(void *p);
/// Copies `count` bytes (NIO's copy hook).
void cv_body_copy(void *dst, const void *src, size_t count);
/// 1 when `p` (from `cv_body_allocate`) lives in a mapping of its own (tests).
int cv_body_is_mapped(const void *p);
/// Bytes the malloc heap has handed out and not had back (glibc's `mallinfo2`; 0 elsewhere; tests).
size_t cv_heap_in_use_bytes(void);

/// `out[i]` = the 128-bit little-endian value at `bytes + 16·i` mod `q`, for `i < count` and `q < 2^30`: a seed's
/// uniform draws as the reference reduces them (one 16-byte draw per residue), straight into 32-bit words.
void cv_reduce_wide32(const uint8_t *bytes, size_t count, uint32_t q, uint32_t *out);
/// Unpacks `count` values of `width` bits (1–32) from the big-endian bit stream `bytes` (`total` bytes; the reference's
/// row packing) into `out`. Returns `count`, or the index of the first value not below `q` (values before it are
/// written, none after).
size_t cv_unpack32(const uint8_t *bytes, size_t total, size_t count, unsigned width, uint32_t q, uint32_t *out);

/// Vector levels a kernel may use.
typedef enum {
    CV_LEVEL_PORTABLE = 0,
    CV_LEVEL_AVX512 = 1,
} cv_level;

/// The best level this CPU supports (checked once with cpuid).
cv_level cv_cpu_level(void);

/// The level the kernels use: the CPU's best unless lowered with `cv_set_level` (tests compare the paths).
cv_level cv_active_level(void);

/// Caps the level the kernels use; returns the level now active (never above the CPU's).
cv_level cv_set_level(cv_level level);

/// Forward negacyclic NTT of `n` (a power of two, at least 32) residues below `4q` in place, `q < 2^30`.
/// `w`/`ws` are the bit-reversed twiddles and their 32-bit Shoup quotients; outputs are fully reduced.
void cv_ntt32_forward(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q);

/// Inverse negacyclic NTT including the factor `n^{-1}` (`inv_n`, Shoup `inv_n_shoup`) of residues below `2q`;
/// outputs fully reduced.
void cv_ntt32_inverse(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q,
                      uint32_t inv_n, uint32_t inv_n_shoup);

/// `cv_ntt32_forward` of `src` into `dst` (out of place: the first stage reads `src`, so no copy; `dst == src` is
/// in place, a partial overlap is not allowed).
void cv_ntt32_forward_to(uint32_t *dst, const uint32_t *src, size_t n, const uint32_t *w, const uint32_t *ws,
                         uint32_t q);

/// `cv_ntt32_inverse` of `src` into `dst`, as `cv_ntt32_forward_to`.
void cv_ntt32_inverse_to(uint32_t *dst, const uint32_t *src, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q,
                         uint32_t inv_n, uint32_t inv_n_shoup);

/// The first-dimension scan of one 32-coefficient block of one column for `streams` selector polynomials:
/// `out[s] = Σ_row pt[row] ⊙ sel[row][s] mod q` (32 coefficients each).
///
/// `pt` is `[rows][32]`; stream `s` of row `r` reads the 32 words at `sel[s] + r * sel_row_stride` (the selectors
/// stay where the query expansion wrote them); rows whose `present` byte is 0 are skipped. Products
/// accumulate in 64-bit lanes for at most `lazy` rows between reductions. Stream `s` writes 32 reduced values
/// to `out + (s / 2) * out_pair_stride + (s % 2) * out_poly_stride`. `barrett` is `floor(2^64 / q)`.
void cv_scan_block32(uint32_t *out, size_t out_pair_stride, size_t out_poly_stride,
                     const uint32_t *pt, const uint8_t *present, size_t rows,
                     const uint32_t *const *sel, size_t sel_row_stride, size_t streams,
                     uint32_t q, uint64_t barrett, size_t lazy);

/// `cv_scan_block32` over `columns` columns of the same block: column `c` reads `pt + c * pt_column_stride` and
/// `present + c * present_column_stride` and writes from `out + c * out_column_stride`. With two streams (one
/// query) the vector path takes the columns four (then two) at a time, loading each selector row once for all.
void cv_scan_columns32(uint32_t *out, size_t out_pair_stride, size_t out_poly_stride, size_t out_column_stride,
                       const uint32_t *pt, size_t pt_column_stride, const uint8_t *present,
                       size_t present_column_stride, size_t columns, size_t rows, const uint32_t *const *sel,
                       size_t sel_row_stride, size_t streams, uint32_t q, uint64_t barrett, size_t lazy);

/// Ciphertext moduli 32-bit key switching supports (its digit tables live on the stack).
#define CV_MAX_KEYSWITCH_MODULI 16

/// Constants of 32-bit key switching with one special modulus over `l` ciphertext moduli (all below 2^30,
/// `l` at most `CV_MAX_KEYSWITCH_MODULI`).
/// Arrays of length `l + 1` are indexed by modulus, the special modulus `p` last.
typedef struct {
    size_t n;                          ///< ring degree (a power of two, at least 32)
    size_t l;                          ///< ciphertext moduli
    const uint32_t *moduli;            ///< q_0 … q_{l-1}, p
    const uint32_t *const *fwd;        ///< forward twiddles per modulus
    const uint32_t *const *fwd_shoup;  ///< their Shoup quotients
    const uint32_t *const *inv;        ///< inverse twiddles per modulus
    const uint32_t *const *inv_shoup;  ///< their Shoup quotients
    const uint32_t *inv_n;             ///< n^{-1} per modulus
    const uint32_t *inv_n_shoup;       ///< its Shoup quotient
    const uint64_t *barrett32;         ///< floor(2^32 / m) per modulus
    const uint32_t *p_inv;             ///< p^{-1} mod q_i (l values)
    const uint32_t *p_inv_shoup;       ///< its Shoup quotients
    const uint32_t *half_mod_q;        ///< floor(p / 2) mod q_i (l values)
} cv_keyswitch_params;

/// 32-bit words of scratch `cv_galois_keyswitch32` needs.
size_t cv_keyswitch_scratch32(const cv_keyswitch_params *pp);

/// The gather table of `σ_g` on `n` coefficients: `table[j]` is the source index of output j, with the top bit
/// set when the coefficient changes sign.
void cv_galois_table(uint32_t *table, size_t n, size_t galois_element);

/// `σ_g` of a ciphertext followed by key switching back to the secret key, all in coefficient form:
/// `in`/`out` are 2 polynomials × `l` rows × `n` words (distinct buffers). `galois_table` is `σ_g`'s table from
/// `cv_galois_table` (or NULL to compute the map inline). `key[j]` is digit j's key ciphertext,
/// `[2][key_rows][n]`, its last row over p.
void cv_galois_keyswitch32(uint32_t *out, const uint32_t *in, size_t galois_element, const uint32_t *galois_table,
                           const cv_keyswitch_params *pp, const uint32_t *const *key, size_t key_rows,
                           uint32_t *scratch32);

/// `cv_galois_keyswitch32` on evaluation-form words (inputs and outputs fully reduced): `perm` is σ_g as a
/// permutation of the evaluation points (`out[j] = in[perm[j]]`). Only the digits and the special modulus's rows
/// visit coefficient form, so query expansion can stay in evaluation form from the root to the leaves. Same
/// scratch size; equals the transform of `cv_galois_keyswitch32`'s output word for word.
void cv_galois_keyswitch32_eval(uint32_t *out, const uint32_t *in, const uint32_t *perm,
                                const cv_keyswitch_params *pp, const uint32_t *const *key, size_t key_rows,
                                uint32_t *scratch32);

/// `cv_expand_combine32` on evaluation-form words: `even = c + r`, `odd = (c − r) · x^{−shift}`; `even` may be
/// `c` and `odd` may be `r` (the split in place). `mono`/`mono_shoup` hold the transform of `x^{−shift}` per row
/// (`l` rows of `n`) and its Shoup quotients; outputs fully reduced.
void cv_expand_combine32_eval(uint32_t *even, uint32_t *odd, const uint32_t *c, const uint32_t *r, size_t n, size_t l,
                              const uint32_t *moduli, const uint32_t *mono, const uint32_t *mono_shoup);

/// One expansion split: `even = c + r`, `odd = (c − r) · x^{−shift}` (negacyclic), for 2 polynomials × `l` rows
/// of `n` words in coefficient form, `0 < shift < n`.
void cv_expand_combine32(uint32_t *even, uint32_t *odd, const uint32_t *c, const uint32_t *r, size_t n, size_t l,
                         const uint32_t *moduli, size_t shift);

/// Centred RNS base conversion (HPS, floating-point correction) of `count` values for moduli below 2^30 on both
/// sides: `in[i * in_stride + j]` mod `from[i]` (`ls` moduli) to `out[k * out_stride + j]` mod `to[k]` (`lt`).
/// Tables: `punct_inv[i] = (B/b_i)^{-1} mod b_i` with Shoup quotients, `recip[i] = 1/b_i`,
/// `punct_in_target[k * ls + i] = [B/b_i]_{m_k}` with Shoup quotients, `prod_in_target[k] = [B]_{m_k}`.
/// `scratch` holds `(ls + 2) · count` words.
void cv_convert_centered32(uint64_t *out, size_t out_stride, const uint64_t *in, size_t in_stride, size_t count,
                           size_t ls, const uint32_t *from, const uint32_t *punct_inv,
                           const uint32_t *punct_inv_shoup, const double *recip,
                           size_t lt, const uint32_t *to, const uint32_t *punct_in_target,
                           const uint32_t *punct_in_target_shoup, const uint32_t *prod_in_target,
                           uint32_t *scratch);


/// Tables of `cv_extend32`: NTTs of every modulus of Q ∪ P (the `lq` ciphertext moduli, then the `lp` auxiliary
/// ones) and the Q → P base conversion (tables as in `cv_convert_centered32`).
typedef struct {
    size_t n;
    size_t lq;
    size_t lp;
    const uint32_t *moduli;
    const uint32_t *const *fwd;
    const uint32_t *const *fwd_shoup;
    const uint32_t *const *inv;
    const uint32_t *const *inv_shoup;
    const uint32_t *inv_n;
    const uint32_t *inv_n_shoup;
    const uint32_t *punct_inv;
    const uint32_t *punct_inv_shoup;
    const double *recip;
    const uint32_t *punct_in_target;
    const uint32_t *punct_in_target_shoup;
    const uint32_t *prod_in_target;
} cv_extend_params;

/// 32-bit words of scratch `cv_extend32` needs.
size_t cv_extend_scratch(const cv_extend_params *pp);

/// Extends a polynomial over Q (`lq` rows of 64-bit words if `in_wide`, else 32-bit words; evaluation form if
/// `in_eval`, else coefficient form) exactly to Q ∪ P in evaluation form: `out` gets `lq + lp` rows of 32-bit
/// words.
void cv_extend32(uint32_t *out, const void *in, int in_wide, int in_eval, const cv_extend_params *pp,
                 uint32_t *scratch);

/// `cv_extend32` of 32-bit words writing only the `lp` rows over P: a caller that reads evaluation-form input
/// words in place needs no copy of its Q rows.
void cv_extend32_p(uint32_t *out_p, const uint32_t *in, int in_eval, const cv_extend_params *pp, uint32_t *scratch);

/// Reduces `count` 64-bit sums modulo `q` (below 2^32) in place: the tensor accumulators between batches of
/// products.
void cv_reduce64(uint64_t *x, size_t count, uint32_t q);

/// Lazy tensor-product accumulation for ciphertext × ciphertext over residues below 2^30 (evaluation form):
/// `acc0 += a0·b0`, `acc1 += a0·b1 + a1·b0`, `acc2 += a1·b1` on `count` 64-bit words, no reduction (callers reduce
/// before 7 products have been added).
void cv_tensor_accumulate32(uint64_t *acc0, uint64_t *acc1, uint64_t *acc2, const uint32_t *a0, const uint32_t *a1,
                            const uint32_t *b0, const uint32_t *b1, size_t count);

#endif
