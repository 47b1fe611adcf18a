// Inline-frame and source-line workload: all time goes to inner_kernel, which gcc -O2 inlines
// into outer_caller, on the line marked HOT.
//
// Usage: inline [seconds=1]
#include <chrono>
#include <cmath>
#include <cstdlib>

static volatile double sink;

static inline __attribute__((always_inline)) double inner_kernel(double acc, long i) {
    return acc + std::sqrt((double)(i ^ 0x5a5a)) * 1.0000001; // HOT
}

extern "C" __attribute__((noinline)) double outer_caller(long iters) {
    double acc = 0;
    for (long i = 0; i < iters; i++) acc = inner_kernel(acc, i);
    return acc;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1;
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) sink = outer_caller(2000000);
    return 0;
}
