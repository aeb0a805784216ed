// Allocator tuning for the PIR server: a query allocates and frees tens of megabytes of ciphertexts, and glibc's
// default (mmap above 128 KiB, return freed heap tops above 256 KiB) turns every such buffer into fresh pages that
// the kernel must fault in and zero. Keeping those buffers in the heap removes that cost.
#include "CKernels.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

void cv_tune_allocator(void) {
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 512 * 1024 * 1024);
#endif
}
