// Parsed evaluation keys' words, kept out of the malloc heap. At population scale nearly every query parses a key
// of about a megabyte into the cache and evicts another: in the heap, those long-lived blocks interleave with the
// queries' short-lived buffers and leave free chunks of every size, which glibc's best-fit search then walks on
// each query's allocations. Here each key has a mapping of its own, and an evicted key's mapping is kept (resident,
// not zeroed again) for the next key of the same size: in steady state a key miss maps and faults in nothing.
#define _GNU_SOURCE
#include "CKernels.h"
#include "Pages.h"

#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

// Kept mappings: enough for a burst of evictions of each key size, bounded in bytes so an idle process holds little.
#define CV_KEY_POOL_ENTRIES 32
#define CV_KEY_POOL_BYTES (48u << 20)

static pthread_mutex_t cv_key_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static void *cv_key_pool_ptr[CV_KEY_POOL_ENTRIES];
static size_t cv_key_pool_len[CV_KEY_POOL_ENTRIES];
static int cv_key_pool_count = 0;
static size_t cv_key_pool_bytes = 0;

void *cv_key_buffer_alloc(size_t bytes) {
    const size_t length = cv_page_length(bytes);
    pthread_mutex_lock(&cv_key_pool_lock);
    for (int i = cv_key_pool_count - 1; i >= 0; i--) {
        if (cv_key_pool_len[i] != length) continue;
        void *p = cv_key_pool_ptr[i];
        cv_key_pool_count--;
        cv_key_pool_ptr[i] = cv_key_pool_ptr[cv_key_pool_count];
        cv_key_pool_len[i] = cv_key_pool_len[cv_key_pool_count];
        cv_key_pool_bytes -= length;
        pthread_mutex_unlock(&cv_key_pool_lock);
        return p;
    }
    pthread_mutex_unlock(&cv_key_pool_lock);
#if defined(__linux__)
    // Faulted in by one call rather than a page at a time as the parse writes it.
    void *p = mmap(0, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? 0 : p;
#else
    return malloc(length);
#endif
}

void cv_key_buffer_free(void *p, size_t bytes) {
    if (!p) return;
    const size_t length = cv_page_length(bytes);
    pthread_mutex_lock(&cv_key_pool_lock);
    if (cv_key_pool_count < CV_KEY_POOL_ENTRIES && cv_key_pool_bytes + length <= CV_KEY_POOL_BYTES) {
        cv_key_pool_ptr[cv_key_pool_count] = p;
        cv_key_pool_len[cv_key_pool_count] = length;
        cv_key_pool_count++;
        cv_key_pool_bytes += length;
        pthread_mutex_unlock(&cv_key_pool_lock);
        return;
    }
    pthread_mutex_unlock(&cv_key_pool_lock);
    cv_unmap_pages(p, length);
}

size_t cv_key_buffer_pooled_bytes(void) {
    pthread_mutex_lock(&cv_key_pool_lock);
    size_t bytes = cv_key_pool_bytes;
    pthread_mutex_unlock(&cv_key_pool_lock);
    return bytes;
}

void cv_key_buffer_drain(void) {
    void *ptrs[CV_KEY_POOL_ENTRIES];
    size_t lens[CV_KEY_POOL_ENTRIES];
    pthread_mutex_lock(&cv_key_pool_lock);
    const int count = cv_take_kept(cv_key_pool_ptr, cv_key_pool_len, &cv_key_pool_count, ptrs, lens);
    cv_key_pool_bytes = 0;
    pthread_mutex_unlock(&cv_key_pool_lock);
    for (int i = 0; i < count; i++) cv_unmap_pages(ptrs[i], lens[i]);
}
