#ifndef BLUELIBRARY_CLINUX_SHIM_H
#define BLUELIBRARY_CLINUX_SHIM_H
/* Linux-only system calls that Swift's Glibc module leaves out. */
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* accept4 is a GNU extension that the Glibc module hides; declared here with its real signature. */
extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);

/* CPUs in this process's affinity mask, via the raw system call (cpu_set_t and CPU_COUNT need
   _GNU_SOURCE, which the Glibc module was built without). Returns 0 if unknown. */
static inline int bl_available_cpus(void) {
    unsigned long mask[64];
    long bytes = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
    if (bytes <= 0) return 0;
    int count = 0;
    for (long i = 0; i < bytes / (long)sizeof(unsigned long); i++) count += __builtin_popcountl(mask[i]);
    return count;
}

/* Names the calling thread as ps/top -H and /proc/self/task/<tid>/comm show it (at most 15 bytes). */
static inline int bl_set_calling_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

/* Puts the calling thread in SCHED_IDLE: it runs only when its CPU has nothing else to run, so
   background maintenance never takes the CPU from request handling. Returns 0, or -1 with errno.
   (Raw system call: SCHED_IDLE needs _GNU_SOURCE, like the affinity call above.) */
static inline int bl_make_calling_thread_idle_priority(void) {
    struct { int sched_priority; } param = { 0 };
    return (int)syscall(SYS_sched_setscheduler, 0, 5 /* SCHED_IDLE */, &param);
}
#endif
