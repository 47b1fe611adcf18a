// Differential-flamegraph workload: `phases before|after SECONDS` spends most of its time in
// func_alpha (before) or in func_beta (after), the rest in func_common.
#include <chrono>
#include <cstdlib>
#include <cstring>

static volatile double sink;

#define SPIN(n, k)                                     \
    double acc = 0;                                    \
    for (long i = 0; i < (n); i++) acc += i * (k);     \
    sink = acc;

extern "C" __attribute__((noinline)) void func_alpha(long n) { SPIN(n, 0.5) }
extern "C" __attribute__((noinline)) void func_beta(long n) { SPIN(n, 0.25) }
extern "C" __attribute__((noinline)) void func_common(long n) { SPIN(n, 0.125) }

int main(int argc, char** argv) {
    bool after = argc > 1 && strcmp(argv[1], "after") == 0;
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
        if (after) func_beta(300000); else func_alpha(300000);
        func_common(100000);
    }
    return 0;
}
