// Whole small pages, the size of an anonymous mapping of a given length, the emptying of a pool of kept mappings and
// the start of the threads that give them back (internal to the kernels).
#ifndef CKERNELS_PAGES_H
#define CKERNELS_PAGES_H

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

/// `bytes` (at least one) rounded up to whole small pages.
static inline size_t cv_page_length(size_t bytes) {
#if defined(__linux__)
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
#else
    const size_t page = 4096;
#endif
    if (bytes == 0) bytes = 1;
    return (bytes + page - 1) & ~(page - 1);
}

/// Gives back a pool's mapping (`free` where there is no `mmap`).
static inline void cv_unmap_pages(void *p, size_t length) {
#if defined(__linux__)
    munmap(p, length);
#else
    (void)length;
    free(p);
#endif
}

/// Moves a pool's `*count` kept mappings into `ptrs` and `lens` and empties it (under the pool's lock); returns how
/// many, for `cv_unmap_pages` after the lock.
static inline int cv_take_kept(void **pool_ptr, size_t *pool_len, int *count, void **ptrs, size_t *lens) {
    const int n = *count;
    for (int i = 0; i < n; i++) { ptrs[i] = pool_ptr[i]; lens[i] = pool_len[i]; }
    *count = 0;
    return n;
}

#if defined(__linux__)
/// Starts `body` on a detached thread with a 64 KiB stack, named `name` (at most 15 characters: a longer name is
/// refused and the thread keeps the process's); 1 when it started.
static inline int cv_start_release_thread(void *(*body)(void *), const char *name) {
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, 64 * 1024);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    const int started = pthread_create(&thread, &attributes, body, 0) == 0;
    pthread_attr_destroy(&attributes);
    if (started) pthread_setname_np(thread, name);
    return started;
}
#endif

#endif
