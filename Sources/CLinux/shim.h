#ifndef BLUELIBRARY_CLINUX_SHIM_H
#define BLUELIBRARY_CLINUX_SHIM_H
/* Linux-only system calls that Swift's Glibc module leaves out. */
#include <malloc.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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

/* Gives the calling thread the lowest normal priority (nice 19; Linux applies setpriority to a
   thread id alone): background maintenance then rarely takes the CPU from request handling,
   yet still gets a small share of a saturated CPU. Returns 0, or -1 with errno. */
static inline int bl_make_calling_thread_nice(void) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
}
/* Sets the calling thread's nice value to `nice` (0-19; Linux applies setpriority to a thread id
   alone, so the rest of the process keeps its own). Returns 0, or -1 with errno. */
static inline int bl_set_calling_thread_nice_value(int nice) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice);
}
/* Bytes a TCP socket's send queue holds that the peer has not acknowledged (sent or not):
   ioctl SIOCOUTQ (TIOCOUTQ). Returns -1 with errno when it cannot tell. */
static inline int bl_socket_unsent_bytes(int fd) {
    int bytes = 0;
    return ioctl(fd, SIOCOUTQ, &bytes) == 0 ? bytes : -1;
}

/* Makes the next close of fd abortive (SO_LINGER with a zero timeout): the kernel sends a reset
   and frees the send queue at once instead of trying to deliver it to a peer that does not read. */
static inline int bl_set_abortive_close(int fd) {
    struct linger off = { 1, 0 };
    return setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof(off));
}

/* Sets SO_SNDBUF (Linux doubles the value for its bookkeeping and stops autotuning it). */
static inline int bl_set_send_buffer(int fd, int bytes) {
    return setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
}
#endif
