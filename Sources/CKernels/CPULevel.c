// Run-time CPU feature detection for the kernels: AVX-512 (F and DQ) needs the cpuid bits and the OS saving the
// opmask and ZMM state (XCR0 bits 1, 2, 5, 6, 7).
#include "CKernels.h"

#if defined(__x86_64__)
#include <cpuid.h>

static int cv_detect_avx512(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    if (!(ecx & (1u << 27))) return 0;  // OSXSAVE
    unsigned int xcr0_lo, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 0xE6u) != 0xE6u) return 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
    // AVX512F and AVX512DQ (the base conversion's 64-bit lanes and conversions to double need DQ; every
    // processor with AVX-512 since Skylake has both).
    return (ebx & (1u << 16)) != 0 && (ebx & (1u << 17)) != 0;
}
#else
static int cv_detect_avx512(void) { return 0; }
#endif

static int cv_detected = -1;
static int cv_cap = CV_LEVEL_AVX512;

cv_level cv_cpu_level(void) {
    int d = __atomic_load_n(&cv_detected, __ATOMIC_RELAXED);
    if (d < 0) {
        d = cv_detect_avx512() ? CV_LEVEL_AVX512 : CV_LEVEL_PORTABLE;
        __atomic_store_n(&cv_detected, d, __ATOMIC_RELAXED);
    }
    return (cv_level)d;
}

cv_level cv_active_level(void) {
    int cpu = cv_cpu_level();
    int cap = __atomic_load_n(&cv_cap, __ATOMIC_RELAXED);
    return (cv_level)(cpu < cap ? cpu : cap);
}

cv_level cv_set_level(cv_level level) {
    __atomic_store_n(&cv_cap, (int)level, __ATOMIC_RELAXED);
    return cv_active_level();
}
