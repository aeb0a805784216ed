// Allocator tuning for the PIR server: a query allocates and frees tens of megabytes of ciphertexts, and a key
// miss parses most of a megabyte; glibc's default (mmap above 128 KiB, return freed heap tops above 256 KiB, grow
// the heap 128 KiB at a time) turns every such buffer into fresh pages that the kernel must fault in and zero.
// Keeping those buffers in the heap, grown 64 MiB at a time, removes that cost (bench/README.md, Population replay);
// once the process has been idle for a while, a thread of its own gives them back (bench/README.md, Service memory).
#define _GNU_SOURCE
#include "CKernels.h"
#include "Pages.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define CV_TRIM_THRESHOLD (1024 * 1024 * 1024)
#define CV_TOP_PAD (64 * 1024 * 1024)

static pthread_mutex_t cv_allocator_lock = PTHREAD_MUTEX_INITIALIZER;
static int cv_allocator_tuned = 0;
static int cv_transient_builds = 0;

static atomic_ulong cv_activity;
static atomic_ulong cv_releases;
static atomic_uint cv_idle_ms = 2000;

void cv_note_activity(void) { atomic_fetch_add_explicit(&cv_activity, 1, memory_order_relaxed); }

uint64_t cv_idle_releases(void) { return atomic_load_explicit(&cv_releases, memory_order_relaxed); }

unsigned cv_set_idle_release_ms(unsigned ms) { return atomic_exchange(&cv_idle_ms, ms); }

#if defined(__GLIBC__)
// Wakes every quarter of the quiet time; once no activity was marked for the whole quiet time after some was, trims
// every arena (what malloc_trim reaches: the main heap's top and the free pages inside every arena's chunks) once.
static void *cv_idle_releaser(void *unused) {
    (void)unused;
    // Activity marked before this thread first ran counts too: a release is due once any has been marked.
    unsigned long seen = atomic_load(&cv_activity), released = 0;
    unsigned quiet = 0;
    for (;;) {
        unsigned ms = atomic_load(&cv_idle_ms);
        unsigned step = ms >= 4 ? ms / 4 : 250;
        struct timespec pause = {step / 1000, (long)(step % 1000) * 1000000L};
        nanosleep(&pause, 0);
        unsigned long now = atomic_load(&cv_activity);
        if (now != seen) { seen = now; quiet = 0; continue; }
        quiet += step;
        if (ms == 0 || quiet < ms || now == released) continue;
        pthread_mutex_lock(&cv_allocator_lock);
        int building = cv_transient_builds;  // a build's end trims anyway
        pthread_mutex_unlock(&cv_allocator_lock);
        if (!building) {
            cv_key_buffer_drain();
            cv_query_buffer_drain();
            malloc_trim(0);
            // The first quiet time follows the start and the first load: their code and tables go back once.
            if (cv_startup_releases() == 0) cv_release_startup_pages();
            atomic_fetch_add(&cv_releases, 1);
        }
        released = now;
    }
    return 0;
}
#endif

void cv_tune_allocator(void) {
#if defined(__GLIBC__)
    pthread_mutex_lock(&cv_allocator_lock);
    // One arena: a thread arena's free top is out of malloc_trim's reach, so with an arena per thread the releases
    // below could not return what queries on the pool's threads freed.
    mallopt(M_ARENA_MAX, 1);
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    if (cv_transient_builds == 0) {
        mallopt(M_TRIM_THRESHOLD, CV_TRIM_THRESHOLD);
        mallopt(M_TOP_PAD, CV_TOP_PAD);
    }
    int start = !cv_allocator_tuned;
    cv_allocator_tuned = 1;
    pthread_mutex_unlock(&cv_allocator_lock);
    if (start) cv_start_release_thread(cv_idle_releaser, "callveil-trim");
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
    // What the build's caller frees next (the shard file it read, the build's inputs) lands in the tuned heap after
    // this trim: counted as activity, it goes back with the next idle release instead of staying resident.
    cv_note_activity();
#endif
}

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

void *cv_huge_alloc(size_t bytes) {
#if defined(__linux__)
    const size_t huge = 2u << 20;
    // Whole small pages, not whole huge pages: a table's last partial huge page is small pages, so a matrix costs at
    // most one small page more than its words (whole huge pages cost up to 2 MiB more per matrix: 3.5 MiB in a
    // 100 MiB shard, and per shard again on a worker with many). `cv_huge_free` unmaps the same length.
    const size_t length = cv_page_length(bytes);
    // Map a huge page more and keep the part that starts on a huge-page boundary, so every whole 2 MiB of the table
    // can be one huge page (the kernel aligns only mappings whose size is a multiple of it).
    const size_t span = length + huge;
    char *raw = mmap(0, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return 0;
    char *start = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
    const size_t head = (size_t)(start - raw);
    const size_t tail = span - head - length;
    if (head) munmap(raw, head);
    if (tail) munmap(start + length, tail);
#if defined(MADV_HUGEPAGE)
    madvise(start, length, MADV_HUGEPAGE);
#endif
    return start;
#else
    void *p = calloc(1, bytes);
    return p;
#endif
}

void cv_huge_free(void *p, size_t bytes) {
    if (!p) return;
#if defined(__linux__)
    munmap(p, cv_page_length(bytes));
#else
    (void)bytes;
    free(p);
#endif
}
