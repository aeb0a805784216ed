// Request bodies outside the malloc heap. A phone's key upload is most of a megabyte, collected whole before it is
// parsed; the tuned heap keeps what is freed until the process is idle, so a burst of uploads left its bodies'
// high-water mark resident for the rest of a run. A large body gets a mapping of its own, grown by remapping and
// given back to the kernel when the buffer is freed (the pages of its capacity it never wrote are never resident);
// a small one stays in the heap. A header before the bytes records which, and the mapping's length.
#define _GNU_SOURCE
#include "CKernels.h"
#include "Pages.h"

#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__linux__)
#include <sys/mman.h>
#endif

// Bodies of this capacity or more are mapped.
#define CV_BODY_MAP_BYTES ((size_t)128 << 10)

typedef struct {
    size_t length;  // the mapping's length, header included; 0 for a heap block
    size_t unused;  // keeps the bytes 16-byte aligned
} cv_body_header;

static void *cv_body_bytes(cv_body_header *h) { return (char *)h + sizeof(cv_body_header); }
static cv_body_header *cv_body_head(void *p) { return (cv_body_header *)((char *)p - sizeof(cv_body_header)); }

static void *cv_body_heap(size_t size) {
    cv_body_header *h = malloc(sizeof(cv_body_header) + size);
    if (!h) return 0;
    h->length = 0;
    return cv_body_bytes(h);
}

static void *cv_body_map(size_t size) {
#if defined(__linux__)
    const size_t length = cv_page_length(sizeof(cv_body_header) + size);
    void *raw = mmap(0, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return cv_body_heap(size);
    cv_body_header *h = raw;
    h->length = length;
    return cv_body_bytes(h);
#else
    return cv_body_heap(size);
#endif
}

void *cv_body_allocate(size_t size) { return size >= CV_BODY_MAP_BYTES ? cv_body_map(size) : cv_body_heap(size); }

void cv_body_deallocate(void *p) {
    if (!p) return;
    cv_body_header *h = cv_body_head(p);
    if (h->length) cv_unmap_pages(h, h->length);
    else free(h);
}

void *cv_body_reallocate(void *p, size_t old_size, size_t new_size) {
    if (!p) return cv_body_allocate(new_size);
    cv_body_header *h = cv_body_head(p);
#if defined(__linux__)
    if (h->length && new_size >= CV_BODY_MAP_BYTES) {
        // The kernel moves the pages (no copy) when the mapping cannot grow in place.
        const size_t length = cv_page_length(sizeof(cv_body_header) + new_size);
        void *moved = mremap(h, h->length, length, MREMAP_MAYMOVE);
        if (moved != MAP_FAILED) {
            h = moved;
            h->length = length;
            return cv_body_bytes(h);
        }
    }
#endif
    if (!h->length && new_size < CV_BODY_MAP_BYTES) {
        cv_body_header *grown = realloc(h, sizeof(cv_body_header) + new_size);
        if (!grown) return 0;
        return cv_body_bytes(grown);
    }
    void *q = cv_body_allocate(new_size);
    if (!q) return 0;
    memcpy(q, p, old_size < new_size ? old_size : new_size);
    cv_body_deallocate(p);
    return q;
}

void cv_body_copy(void *dst, const void *src, size_t count) { memcpy(dst, src, count); }

int cv_body_is_mapped(const void *p) { return p && ((const cv_body_header *)((const char *)p - sizeof(cv_body_header)))->length != 0; }

size_t cv_heap_in_use_bytes(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    return mallinfo2().uordblks;
#else
    return 0;
#endif
}
