// A query's expanded selectors (about 8 MiB at Live Caller ID dimensions), kept out of the malloc heap. In the heap,
// each query's block is freed among the smaller buffers other queries still hold, and the next query's block rarely
// fits the hole it left: with two queries computing at once the heap grew to twice what they held. Here each block
// is a mapping of its own, backed by transparent huge pages where the kernel allows and faulted in by one call, so a
// new one costs a few huge-page faults and the zeroing rather than two thousand small faults. While other queries
// still hold theirs, a finished query's mapping is kept for the next one, but only as many as were ever in use at once
// since the last drain (kept and in use together never exceed that), the largest ones. Once no query holds one, all
// go back, as the reference's allocator returns a query's memory when it ends: nothing of a burst outlasts it.
#define _GNU_SOURCE
#include "CKernels.h"
#include "Pages.h"

#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>

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

void *cv_query_buffer_alloc(size_t bytes, size_t *length) {
    const size_t wanted = cv_page_length(bytes);
    pthread_mutex_lock(&cv_query_pool_lock);
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
        pthread_mutex_lock(&cv_query_pool_lock);
        cv_query_live--;
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
        // No query holds one any more: this mapping and the kept ones go now rather than at the idle release, so a
        // burst's memory does not outlast it, and the count of the most in use at once starts afresh.
        void *ptrs[CV_QUERY_POOL_MAX];
        size_t lens[CV_QUERY_POOL_MAX];
        const int count = cv_take_kept(cv_query_pool_ptr, cv_query_pool_len, &cv_query_pool_count, ptrs, lens);
        cv_query_high = 0;
        pthread_mutex_unlock(&cv_query_pool_lock);
        for (int i = 0; i < count; i++) cv_unmap_pages(ptrs[i], lens[i]);
        cv_unmap_pages(p, length);
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
    pthread_mutex_unlock(&cv_query_pool_lock);
    for (int i = 0; i < count; i++) cv_unmap_pages(ptrs[i], lens[i]);
}
