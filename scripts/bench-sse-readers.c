/*
 * Many `GET /events` subscribers in one process, for scripts/bench-fanout.py: it opens N
 * keep-alive connections to 127.0.0.1:PORT, asks each for PATH, and reads every stream with
 * one epoll loop, counting per stream the occurrences of `event: album.added` (a KMP matcher,
 * so a frame split across reads is counted once). Written in C so that reading thousands of
 * streams costs the client core little next to the server it measures.
 *
 *   bench-sse-readers PORT N PATH
 *
 * Commands on stdin, one per line, answered with one line on stdout:
 *   stats   -> "open=<streams still open> min=<fewest events> max=<most> reads=<read calls>
 *               bytes=<bytes read>"
 *   quit    -> exits (closing every stream)
 * Prints "ready <connected>" once every connection is made and its request sent.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static const char pattern[] = "event: album.added\n";
#define PATTERN_LENGTH (sizeof(pattern) - 1)
static int failure[PATTERN_LENGTH];

struct stream {
    int fd;
    int open;
    int matched; /* characters of `pattern` matched so far */
    long events;
};

static void build_failure(void) {
    failure[0] = 0;
    int k = 0;
    for (size_t i = 1; i < PATTERN_LENGTH; i++) {
        while (k > 0 && pattern[i] != pattern[k]) k = failure[k - 1];
        if (pattern[i] == pattern[k]) k++;
        failure[i] = k;
    }
}

static void scan(struct stream *s, const char *bytes, ssize_t n) {
    int k = s->matched;
    for (ssize_t i = 0; i < n; i++) {
        while (k > 0 && bytes[i] != pattern[k]) k = failure[k - 1];
        if (bytes[i] == pattern[k]) k++;
        if (k == (int)PATTERN_LENGTH) {
            s->events++;
            k = failure[k - 1];
        }
    }
    s->matched = k;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s PORT N PATH\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]);
    int n = atoi(argv[2]);
    const char *path = argv[3];
    build_failure();

    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }

    char request[1024];
    int length = snprintf(request, sizeof request,
                          "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n", path);
    struct sockaddr_in address = {0};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    int epfd = epoll_create1(EPOLL_CLOEXEC);
    struct stream *streams = calloc(n, sizeof *streams);
    int connected = 0;
    for (int i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
            fprintf(stderr, "connection %d: %s\n", i, strerror(errno));
            if (fd >= 0) close(fd);
            break;
        }
        if (write(fd, request, length) != length) {
            fprintf(stderr, "request %d: %s\n", i, strerror(errno));
            close(fd);
            break;
        }
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        streams[i] = (struct stream){.fd = fd, .open = 1};
        struct epoll_event event = {.events = EPOLLIN, .data.u64 = (uint64_t)i};
        epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
        connected++;
    }
    struct epoll_event input = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
    epoll_ctl(epfd, EPOLL_CTL_ADD, 0, &input);
    printf("ready %d\n", connected);
    fflush(stdout);

    static char buffer[256 * 1024];
    static char line[256];
    size_t line_length = 0;
    long reads = 0, bytes = 0;
    struct epoll_event events[512];
    for (;;) {
        int ready = epoll_wait(epfd, events, 512, -1);
        if (ready < 0) {
            if (errno == EINTR) continue;
            perror("epoll_wait");
            return 1;
        }
        for (int e = 0; e < ready; e++) {
            if (events[e].data.u64 == UINT64_MAX) {
                ssize_t got = read(0, line + line_length, sizeof line - 1 - line_length);
                if (got <= 0) return 0;
                line_length += got;
                line[line_length] = 0;
                char *end;
                while ((end = strchr(line, '\n'))) {
                    *end = 0;
                    if (strcmp(line, "quit") == 0) return 0;
                    if (strcmp(line, "stats") == 0) {
                        long low = -1, high = 0;
                        int open = 0;
                        for (int i = 0; i < connected; i++) {
                            open += streams[i].open;
                            if (low < 0 || streams[i].events < low) low = streams[i].events;
                            if (streams[i].events > high) high = streams[i].events;
                        }
                        printf("open=%d min=%ld max=%ld reads=%ld bytes=%ld\n", open, low < 0 ? 0 : low, high, reads, bytes);
                        fflush(stdout);
                    }
                    size_t rest = line_length - (size_t)(end + 1 - line);
                    memmove(line, end + 1, rest);
                    line_length = rest;
                    line[line_length] = 0;
                }
                if (line_length == sizeof line - 1) line_length = 0;
                continue;
            }
            struct stream *s = &streams[events[e].data.u64];
            for (;;) {
                ssize_t got = read(s->fd, buffer, sizeof buffer);
                if (got > 0) {
                    reads++;
                    bytes += got;
                    scan(s, buffer, got);
                    if (got < (ssize_t)sizeof buffer) break;
                    continue;
                }
                if (got < 0 && (errno == EAGAIN || errno == EINTR)) break;
                /* closed by the server (or an error): forget it */
                epoll_ctl(epfd, EPOLL_CTL_DEL, s->fd, NULL);
                close(s->fd);
                s->open = 0;
                break;
            }
        }
    }
}
