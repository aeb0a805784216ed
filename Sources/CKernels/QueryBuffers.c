// A query's expanded selectors (about 8 MiB at Live Caller ID dimensions), kept out of the malloc heap. In the heap,
// each query's block is freed among the smaller buffers other queries still hold, and the next query's block rarely
// fits the hole it left: with two queries computing at once the heap grew to twice what they held. Here each block
// is a mapping of its own, backed by transparent huge pages where the kernel allows and faulted in by one call, so a
// new one costs a few huge-page faults and the zeroing rather than two thousand small faults. While other queries
// still hold theirs, a finished query's mapping is kept for the next one, but only as many as were ever in use at once
// since the last drain (kept and in use together never exceed that), the largest ones. Once no query holds one, the
// largest stays for a short grace time (`cv_set_query_keep_ms`, 20 ms by default) and the others go at once: queries
// back to back (a saturated worker) reuse it instead of faulting in and zeroing a fresh one each time, and when no
// query follows within the grace time it goes too, so nothing of a burst outlasts it by more than that.
#define _GNU_SOURCE
#include "CKernels.h"
#include "Pages.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#define CV_QUERY_POOL_MAX 64

#if defined(MADV_POPULATE_WRITE)
#define CV_MADV_POPULATE_WRITE MADV_POPULATE_WRITE
#else
#define CV_MADV_POPULATE_WRITE 23  // Linux 5.14's value, for older headers
#endif

static pthread_mutex_t cv_query_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static void *cv_query_pool_ptr[CV_QUERY_POOL_MAX];
static size_t cv_query_pool_len[CV_QUERY_POOL_MAX];
static int cv_query_pool_count = 0;
static int cv_query_live = 0;   // mappings handed out and not yet returned
static int cv_query_high = 0;   // most of them out at once since the last drain
static atomic_uint cv_query_keep_ms = 20;
// The grace time's release: armed (with its deadline) by the last mapping returned while none is in use, disarmed by
// the next query; a thread of its own, started with the first grace time, unmaps what is kept once the deadline
// passes still armed.
static int cv_query_release_armed = 0;

unsigned cv_set_query_keep_ms(unsigned ms) { return atomic_exchange(&cv_query_keep_ms, ms); }

#if defined(__linux__)
static pthread_cond_t cv_query_release_cond;
static struct timespec cv_query_release_deadline;
static int cv_query_release_thread = 0;

static void *cv_query_releaser(void *unused) {
    (void)unused;
    pthread_mutex_lock(&cv_query_pool_lock);
    for (;;) {
        while (!cv_query_release_armed) pthread_cond_wait(&cv_query_release_cond, &cv_query_pool_lock);
        const struct timespec deadline = cv_query_release_deadline;
        if (pthread_cond_timedwait(&cv_query_release_cond, &cv_query_pool_lock, &deadline) == 0) continue;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        const struct timespec due = cv_query_release_deadline;
        if (!cv_query_release_armed || cv_query_live > 0 || now.tv_sec < due.tv_sec ||
            (now.tv_sec == due.tv_sec && now.tv_nsec < due.tv_nsec)) continue;
        void *ptrs[CV_QUERY_POOL_MAX];
        size_t lens[CV_QUERY_POOL_MAX];
        const int count = cv_take_kept(cv_query_pool_ptr, cv_query_pool_len, &cv_query_pool_count, ptrs, lens);
        cv_query_release_armed = 0;
        cv_query_high = 0;
        pthread_mutex_unlock(&cv_query_pool_lock);
        for (int i = 0; i < count; i++) cv_unmap_pages(ptrs[i], lens[i]);
        pthread_mutex_lock(&cv_query_pool_lock);
    }
    return 0;
}

// Arms the grace time's release (under the pool's lock); 0 where its thread cannot be had (or off Linux, whose
// monotonic condition clock it uses), and then the caller unmaps at once.
static int cv_arm_query_release(unsigned ms) {
    if (!cv_query_release_thread) {
        pthread_condattr_t attributes;
        pthread_condattr_init(&attributes);
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
        pthread_cond_init(&cv_query_release_cond, &attributes);
        pthread_condattr_destroy(&attributes);
        if (!cv_start_release_thread(cv_query_releaser, "callveil-query")) {
            pthread_cond_destroy(&cv_query_release_cond);
            return 0;
        }
        cv_query_release_thread = 1;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += ms / 1000;
    deadline.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    cv_query_release_deadline = deadline;
    cv_query_release_armed = 1;
    pthread_cond_signal(&cv_query_release_cond);
    return 1;
}
#else
static int cv_arm_query_release(unsigned ms) {
    (void)ms;
    return 0;
}
#endif

void *cv_query_buffer_alloc(size_t bytes, size_t *length) {
    const size_t wanted = cv_page_length(bytes);
    pthread_mutex_lock(&cv_query_pool_lock);
    cv_query_release_armed = 0;
    cv_query_live++;
    if (cv_query_live > cv_query_high) cv_query_high = cv_query_live;
    // The smallest kept mapping that holds the request.
    int best = -1;
    for (int i = 0; i < cv_query_pool_count; i++) {
        if (cv_query_pool_len[i] >= wanted && (best < 0 || cv_query_pool_len[i] < cv_query_pool_len[best])) best = i;
    }
    if (best >= 0) {
        void *p = cv_query_pool_ptr[best];
        *length = cv_query_pool_len[best];
        cv_query_pool_count--;
        cv_query_pool_ptr[best] = cv_query_pool_ptr[cv_query_pool_count];
        cv_query_pool_len[best] = cv_query_pool_len[cv_query_pool_count];
        pthread_mutex_unlock(&cv_query_pool_lock);
        return p;
    }
    pthread_mutex_unlock(&cv_query_pool_lock);
    *length = wanted;
#if defined(__linux__)
    // Huge pages from a 2 MiB boundary, whole small pages long (`cv_huge_alloc`, so `wanted` is its length), faulted
    // in by one call rather than a page at a time as the expansion writes it. A kernel without MADV_POPULATE_WRITE
    // (before 5.14) refuses the advice and the pages fault in as they are written.
    void *p = cv_huge_alloc(bytes);
    if (p) madvise(p, wanted, CV_MADV_POPULATE_WRITE);
#else
    void *p = malloc(wanted);
#endif
    if (!p) {
        // None given: as if the query had not started, the kept mapping's grace time runs again when none is in use.
        pthread_mutex_lock(&cv_query_pool_lock);
        cv_query_live--;
        const unsigned keep = atomic_load(&cv_query_keep_ms);
        if (cv_query_live == 0 && cv_query_pool_count > 0 && keep > 0) cv_arm_query_release(keep);
        pthread_mutex_unlock(&cv_query_pool_lock);
    }
    return p;
}

void cv_query_buffer_free(void *p, size_t length) {
    if (!p) return;
    void *drop = p;
    size_t drop_length = length;
    pthread_mutex_lock(&cv_query_pool_lock);
    if (cv_query_live > 0) cv_query_live--;
    if (cv_query_live == 0) {
        // No query holds one any more: the kept ones go now rather than at the idle release, so a burst's memory does
        // not outlast it, and the count of the most in use at once starts afresh. The largest of these (the kept ones
        // and this one) stays for the grace time, for a query that follows at once.
        void *ptrs[CV_QUERY_POOL_MAX + 1];
        size_t lens[CV_QUERY_POOL_MAX + 1];
        int count = cv_take_kept(cv_query_pool_ptr, cv_query_pool_len, &cv_query_pool_count, ptrs, lens);
        ptrs[count] = p;
        lens[count] = length;
        count++;
        cv_query_high = 0;
        const unsigned keep = atomic_load(&cv_query_keep_ms);
        if (keep > 0) {
            int largest = 0;
            for (int i = 1; i < count; i++) {
                if (lens[i] > lens[largest]) largest = i;
            }
            if (cv_arm_query_release(keep)) {
                cv_query_pool_ptr[0] = ptrs[largest];
                cv_query_pool_len[0] = lens[largest];
                cv_query_pool_count = 1;
                cv_query_high = 1;
                count--;
                ptrs[largest] = ptrs[count];
                lens[largest] = lens[count];
            }
        }
        pthread_mutex_unlock(&cv_query_pool_lock);
        for (int i = 0; i < count; i++) cv_unmap_pages(ptrs[i], lens[i]);
        return;
    }
    if (cv_query_pool_count + cv_query_live < cv_query_high && cv_query_pool_count < CV_QUERY_POOL_MAX) {
        cv_query_pool_ptr[cv_query_pool_count] = p;
        cv_query_pool_len[cv_query_pool_count] = length;
        cv_query_pool_count++;
        drop = 0;
    } else if (cv_query_pool_count > 0) {
        // Full: keep the larger of this mapping and the smallest kept one.
        int smallest = 0;
        for (int i = 1; i < cv_query_pool_count; i++) {
            if (cv_query_pool_len[i] < cv_query_pool_len[smallest]) smallest = i;
        }
        if (cv_query_pool_len[smallest] < length) {
            drop = cv_query_pool_ptr[smallest];
            drop_length = cv_query_pool_len[smallest];
            cv_query_pool_ptr[smallest] = p;
            cv_query_pool_len[smallest] = length;
        }
    }
    pthread_mutex_unlock(&cv_query_pool_lock);
    if (drop) cv_unmap_pages(drop, drop_length);
}

size_t cv_query_buffer_pooled_bytes(void) {
    pthread_mutex_lock(&cv_query_pool_lock);
    size_t bytes = 0;
    for (int i = 0; i < cv_query_pool_count; i++) bytes += cv_query_pool_len[i];
    pthread_mutex_unlock(&cv_query_pool_lock);
    return bytes;
}

void cv_query_buffer_drain(void) {
    void *ptrs[CV_QUERY_POOL_MAX];
    size_t lens[CV_QUERY_POOL_MAX];
    pthread_mutex_lock(&cv_query_pool_lock);
    const int count = cv_take_kept(cv_query_pool_ptr, cv_query_pool_len, &cv_query_pool_count, ptrs, lens);
    cv_query_high = cv_query_live;
    cv_query_release_armed = 0;
    pthread_mutex_unlock(&cv_query_pool_lock);
    for (int i = 0; i < count; i++) cv_unmap_pages(ptrs[i], lens[i]);
}
