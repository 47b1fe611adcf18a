// rperf's test and demo workload: N threads spend their time in a known hot function reached
// through a known caller chain (main/thread entry -> run_worker -> compute_outer -> compute_inner
// -> hot_loop), plus a call into a shared library (libm) so reports show several DSOs.
//
// Usage: workload [seconds=1] [threads=2] [depth=0] [rounds=0]
//   depth > 0 adds that many recursive frames above hot_loop (deep stacks for unwinding tests);
//   rounds > 0 makes each thread do a fixed amount of work instead of running for `seconds`
//   (for overhead benchmarks, where wall time must measure the slowdown).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <thread>
#include <vector>
#include <sys/resource.h>

static volatile double sink;

extern "C" __attribute__((noinline)) double hot_loop(long iters) {
    double acc = 0;
    for (long i = 0; i < iters; i++) acc += std::sqrt((double)(i ^ 0x5a5a)) * 1.0000001;
    return acc;
}

extern "C" __attribute__((noinline)) double compute_inner(long iters) {
    return hot_loop(iters) + std::cos((double)iters);
}

extern "C" __attribute__((noinline)) double deep(int depth, long iters) {
    if (depth <= 0) return compute_inner(iters);
    double r = deep(depth - 1, iters);
    sink = r;
    return r + 1;
}

extern "C" __attribute__((noinline)) double compute_outer(long iters, int depth) {
    return deep(depth, iters) * 0.5;
}

extern "C" __attribute__((noinline)) void run_worker(double seconds, int depth, long rounds) {
    if (rounds > 0) {
        for (long r = 0; r < rounds; r++) sink = compute_outer(200000, depth);
        return;
    }
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) sink = compute_outer(200000, depth);
}

int main(int argc, char** argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    int depth = argc > 3 ? atoi(argv[3]) : 0;
    long rounds = argc > 4 ? atol(argv[4]) : 0;
    std::vector<std::thread> pool;
    for (int i = 1; i < threads; i++) pool.emplace_back(run_worker, seconds, depth, rounds);
    run_worker(seconds, depth, rounds);
    for (auto& t : pool) t.join();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(stderr, "workload: cpu_seconds=%.3f\n",
            ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
    return 0;
}
