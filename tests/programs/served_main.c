// A program and its library (served_lib.c), for the debuginfod tests: time is split between
// main_inner (inlined into main_outer, a static function) and the library's lib_outer.
//
// Usage: served_main [seconds=1]
#include <stdlib.h>
#include <time.h>

double lib_outer(long iters);
static volatile double sink;

static inline __attribute__((always_inline)) unsigned long main_inner(unsigned long acc, long i) {
    return acc * 31 + ((unsigned long)i ^ (acc >> 7)); // MAIN HOT
}

static __attribute__((noinline)) double main_outer(long iters) {
    unsigned long acc = 1;
    for (long i = 0; i < iters; i++) acc = main_inner(acc, i);
    sink = acc; // a side effect: the calls are not merged into one
    return acc;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        sink = main_outer(200000) + lib_outer(200000);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
    return 0;
}
