// An LD_PRELOAD shim that slows every fsync(2) and fdatasync(2) down, standing in for a busy
// flash or a disk shared with other writers (issue 35): each call sleeps SLOW_FSYNC_MS
// milliseconds (150 by default; 0 turns the delay off) and then runs the real call.
//
//   cc -shared -fPIC -O2 -o slowfsync.so slowfsync.c -ldl
//   LD_PRELOAD=$PWD/slowfsync.so SLOW_FSYNC_MS=150 Tools/.build/release/bench --filter score.fsync
//
// Linux only (glibc's RTLD_NEXT). Calls made through Swift's Glibc module bind to these symbols
// like any other dynamic call. `SLOW_FSYNC_COUNT` (optional) is the path of a file the shim
// appends one line to per slowed call, for checking that the shim is loaded.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long slow_ms(void) {
    static long ms = -1;
    if (ms < 0) {
        const char *v = getenv("SLOW_FSYNC_MS");
        long parsed = v && *v ? strtol(v, NULL, 10) : 150;
        ms = parsed < 0 ? 0 : parsed;
    }
    return ms;
}

static void slow_down(void) {
    long ms = slow_ms();
    const char *count = getenv("SLOW_FSYNC_COUNT");
    if (count && *count) {
        int saved = errno;
        FILE *f = fopen(count, "a");
        if (f) {
            fputs("fsync\n", f);
            fclose(f);
        }
        errno = saved;
    }
    if (ms == 0) return;
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {}
}

int fsync(int fd) {
    static int (*real)(int) = NULL;
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    int saved = errno;
    slow_down();
    errno = saved;
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int) = NULL;
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    int saved = errno;
    slow_down();
    errno = saved;
    return real(fd);
}
