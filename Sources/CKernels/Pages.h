// Whole small pages, the size of an anonymous mapping of a given length (internal to the kernels).
#ifndef CKERNELS_PAGES_H
#define CKERNELS_PAGES_H

#include <stddef.h>
#if defined(__linux__)
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

#endif
