// Allocator tuning for the PIR server: a query allocates and frees tens of megabytes of ciphertexts, and a key
// miss parses most of a megabyte; glibc's default (mmap above 128 KiB, return freed heap tops above 256 KiB, grow
// the heap 128 KiB at a time) turns every such buffer into fresh pages that the kernel must fault in and zero.
// Keeping those buffers in the heap, grown 64 MiB at a time, removes that cost (bench/README.md, Population replay).
#include "CKernels.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <pthread.h>

#define CV_TRIM_THRESHOLD (1024 * 1024 * 1024)
#define CV_TOP_PAD (64 * 1024 * 1024)

static pthread_mutex_t cv_allocator_lock = PTHREAD_MUTEX_INITIALIZER;
static int cv_allocator_tuned = 0;
static int cv_transient_builds = 0;

void cv_tune_allocator(void) {
#if defined(__GLIBC__)
    pthread_mutex_lock(&cv_allocator_lock);
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    if (cv_transient_builds == 0) {
        mallopt(M_TRIM_THRESHOLD, CV_TRIM_THRESHOLD);
        mallopt(M_TOP_PAD, CV_TOP_PAD);
    }
    cv_allocator_tuned = 1;
    pthread_mutex_unlock(&cv_allocator_lock);
#endif
}

// A thread arena (every thread but the first allocates from one) returns the free top of its heap only when a free
// reaches the trim threshold, and malloc_trim leaves those tops alone: with the tuned 1 GiB threshold and 64 MiB pad,
// whatever a build freed in a thread's arena stayed resident (two 64 MiB arenas after a first load). While a build
// runs, the thresholds go back to trimming; the last build to end restores them and trims every arena.
void cv_transient_begin(void) {
#if defined(__GLIBC__)
    pthread_mutex_lock(&cv_allocator_lock);
    if (cv_transient_builds++ == 0 && cv_allocator_tuned) {
        mallopt(M_TRIM_THRESHOLD, 128 * 1024);
        mallopt(M_TOP_PAD, 0);
    }
    pthread_mutex_unlock(&cv_allocator_lock);
#endif
}

void cv_transient_end(void) {
#if defined(__GLIBC__)
    pthread_mutex_lock(&cv_allocator_lock);
    if (cv_transient_builds > 0 && --cv_transient_builds == 0 && cv_allocator_tuned) {
        mallopt(M_TRIM_THRESHOLD, CV_TRIM_THRESHOLD);
        mallopt(M_TOP_PAD, CV_TOP_PAD);
    }
    pthread_mutex_unlock(&cv_allocator_lock);
    malloc_trim(0);
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
