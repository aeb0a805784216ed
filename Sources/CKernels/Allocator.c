// Allocator tuning for the PIR server: a query allocates and frees tens of megabytes of ciphertexts, and a key
// miss parses most of a megabyte; glibc's default (mmap above 128 KiB, return freed heap tops above 256 KiB, grow
// the heap 128 KiB at a time) turns every such buffer into fresh pages that the kernel must fault in and zero.
// Keeping those buffers in the heap, grown 64 MiB at a time, removes that cost (bench/README.md, Population replay).
#include "CKernels.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

void cv_tune_allocator(void) {
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
    mallopt(M_TOP_PAD, 64 * 1024 * 1024);
#endif
}

int cv_release_free_memory(void) {
#if defined(__GLIBC__)
    return malloc_trim(0);
#else
    return 0;
#endif
}

#if defined(__linux__)
#include <sys/mman.h>
#endif
#include <stdlib.h>
#include <string.h>

void *cv_huge_alloc(size_t bytes) {
    if (bytes == 0) bytes = 1;
#if defined(__linux__)
    const size_t huge = 2u << 20;
    size_t rounded = (bytes + huge - 1) & ~(huge - 1);
    void *p = mmap(0, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 0;
#if defined(MADV_HUGEPAGE)
    madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return p;
#else
    void *p = calloc(1, bytes);
    return p;
#endif
}

void cv_huge_free(void *p, size_t bytes) {
    if (!p) return;
#if defined(__linux__)
    const size_t huge = 2u << 20;
    if (bytes == 0) bytes = 1;
    munmap(p, (bytes + huge - 1) & ~(huge - 1));
#else
    (void)bytes;
    free(p);
#endif
}
