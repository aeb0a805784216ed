// Start-up pages: the code and read-only data of the program and its libraries that only starting and the first
// load ran (argument parsing, the config, the dynamic loader's relocation tables, the shard build) would otherwise
// stay resident for the process's life, 9–12 MiB for `serve` (bench/README.md, Service memory). Once, at the first
// idle release, the process asks the kernel to reclaim the clean pages of those segments that it alone maps; what
// serving runs faults back in at its next touch. Only the read-only segments of loaded ELF objects are advised, never
// a data mapping (shard and scan files, the evaluation form, keys), and the kernel skips pages other processes map.
#define _GNU_SOURCE
#include "CKernels.h"

#include <stdatomic.h>

#if defined(__linux__)
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

static atomic_ulong cv_startup_release_count;

struct cv_startup_walk {
    uintptr_t page;
    size_t bytes;
};

static int cv_release_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct cv_startup_walk *walk = data;
    // The program itself has an empty name; the vDSO's has no path and is no file to reclaim from.
    if (info->dlpi_name && info->dlpi_name[0] && !strchr(info->dlpi_name, '/')) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD || (segment->p_flags & PF_W) || segment->p_memsz == 0) continue;
        // Whole pages inside the segment only: a page shared with a writable neighbour is left alone.
        uintptr_t start = (uintptr_t)info->dlpi_addr + (uintptr_t)segment->p_vaddr;
        uintptr_t end = start + (uintptr_t)segment->p_memsz;
        start = (start + walk->page - 1) & ~(walk->page - 1);
        end &= ~(walk->page - 1);
        if (end <= start) continue;
        // An older kernel without MADV_PAGEOUT refuses it (EINVAL): the pages then stay, as before.
        if (madvise((void *)start, end - start, MADV_PAGEOUT) == 0) walk->bytes += end - start;
    }
    return 0;
}

size_t cv_release_startup_pages(void) {
    long page = sysconf(_SC_PAGESIZE);
    struct cv_startup_walk walk = {(uintptr_t)(page > 0 ? page : 4096), 0};
    dl_iterate_phdr(cv_release_object, &walk);
    atomic_fetch_add(&cv_startup_release_count, 1);
    return walk.bytes;
}

uint64_t cv_startup_releases(void) { return atomic_load(&cv_startup_release_count); }
#else
size_t cv_release_startup_pages(void) { return 0; }
uint64_t cv_startup_releases(void) { return 0; }
#endif
