// The cores this process may use: its CPU affinity mask (taskset, a cpuset cgroup) and, under a cgroup CPU quota
// (cgroup v2 cpu.max, v1 cpu.cfs_quota_us), the quota rounded up. sysconf counts every online core of the machine,
// so a server confined to one core of two ran two threads per query and two queries at once on it.
#define _GNU_SOURCE
#include "CKernels.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#if defined(__linux__)
#include <sched.h>
#endif

#if defined(__linux__)
/// ceil(quota / period) from a cgroup file, or 0 when there is no quota ("max", missing file, nonsense).
static long cv_quota_cores(const char *path, int two_files, const char *period_path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char word[32] = {0};
    long quota = 0, period = 0;
    int read = fscanf(f, "%31s %ld", word, &period);
    fclose(f);
    if (read < 1 || word[0] == 'm') return 0;  // "max": no quota
    quota = atol(word);
    if (two_files) {
        FILE *p = fopen(period_path, "r");
        if (!p) return 0;
        if (fscanf(p, "%ld", &period) != 1) period = 0;
        fclose(p);
    } else if (read < 2) {
        return 0;
    }
    if (quota <= 0 || period <= 0) return 0;
    return (quota + period - 1) / period;
}
#endif

int cv_usable_cores(void) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    long cores = online > 0 ? online : 1;
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        long allowed = CPU_COUNT(&set);
        if (allowed > 0 && allowed < cores) cores = allowed;
    }
    long quota = cv_quota_cores("/sys/fs/cgroup/cpu.max", 0, NULL);
    if (quota == 0) quota = cv_quota_cores("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", 1, "/sys/fs/cgroup/cpu/cpu.cfs_period_us");
    if (quota > 0 && quota < cores) cores = quota;
#endif
    return (int)cores;
}
