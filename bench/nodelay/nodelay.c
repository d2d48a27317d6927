/*
 * A preload for measuring a host that leaves Nagle's algorithm on: every
 * socket it accepts gets TCP_NODELAY, as Cairn's host sets on its own
 * (docs/upstream/spin-http-nodelay.md). `cairn-bench spin` builds it with
 * `cc -shared -fPIC` and starts Spin with LD_PRELOAD for the column that
 * shows what the one-line fix upstream is worth. Not part of any server.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

static void nodelay(int fd) {
    int on = 1;
    if (fd >= 0) {
        /* Fails harmlessly on a socket that is not TCP. */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    }
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    static int (*real)(int, struct sockaddr *, socklen_t *, int);
    if (!real) {
        real = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
    }
    int s = real(fd, addr, len, flags);
    nodelay(s);
    return s;
}

int accept(int fd, struct sockaddr *addr, socklen_t *len) {
    static int (*real)(int, struct sockaddr *, socklen_t *);
    if (!real) {
        real = (int (*)(int, struct sockaddr *, socklen_t *))dlsym(RTLD_NEXT, "accept");
    }
    int s = real(fd, addr, len);
    nodelay(s);
    return s;
}
