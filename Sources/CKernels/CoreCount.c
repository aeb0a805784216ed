// The cores this process may use: its CPU affinity mask (taskset, a cpuset cgroup) and, under a CPU quota on its own
// cgroup (cgroup v2 cpu.max, v1 cpu.cfs_quota_us; a systemd CPUQuota=, a container limit), the quota rounded up.
// sysconf counts every online core of the machine, so a server confined to one core of two ran two threads per query
// and two queries at once on it.
#define _GNU_SOURCE
#include "CKernels.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    // The process's own cgroup (a systemd unit's CPUQuota=, a container's limit), from /proc/self/cgroup:
    // "0::/path" (v2) or "N:...cpu...:/path" (v1).
    char v2[512] = "", v1[512] = "";
    FILE *self = fopen("/proc/self/cgroup", "r");
    if (self) {
        char line[1024];
        while (fgets(line, sizeof(line), self)) {
            line[strcspn(line, "\n")] = 0;
            char *first = strchr(line, ':');
            char *second = first ? strchr(first + 1, ':') : NULL;
            if (!second) continue;
            *second = 0;
            const char *controllers = first + 1, *path = second + 1;
            if (strcmp(path, "/") == 0) path = "";
            if (controllers[0] == 0 && line[0] == '0') {
                snprintf(v2, sizeof(v2), "/sys/fs/cgroup%s/cpu.max", path);
            } else {
                for (const char *c = controllers; c && *c; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL) {
                    if (strncmp(c, "cpu", 3) == 0 && (c[3] == ',' || c[3] == 0)) {
                        snprintf(v1, sizeof(v1), "/sys/fs/cgroup/cpu%s", path);
                        break;
                    }
                }
            }
        }
        fclose(self);
    }
    long quota = v2[0] ? cv_quota_cores(v2, 0, NULL) : 0;
    if (quota == 0 && v1[0]) {
        char q[600], period[600];
        snprintf(q, sizeof(q), "%s/cpu.cfs_quota_us", v1);
        snprintf(period, sizeof(period), "%s/cpu.cfs_period_us", v1);
        quota = cv_quota_cores(q, 1, period);
    }
    if (quota > 0 && quota < cores) cores = quota;
#endif
    return (int)cores;
}
