// The library half of served_main.c: its time goes to lib_inner, which gcc -O2 inlines into
// lib_outer. Built -g; the debuginfod tests run stripped copies and serve these.
static volatile double lib_sink;

static inline __attribute__((always_inline)) unsigned long lib_inner(unsigned long acc, long i) {
    return acc * 31 + ((unsigned long)i ^ (acc >> 7)); // LIB HOT
}

__attribute__((noinline)) double lib_outer(long iters) {
    unsigned long acc = 1;
    for (long i = 0; i < iters; i++) acc = lib_inner(acc, i);
    lib_sink = acc;
    return acc;
}
