// An app with a startup phase: `startup STARTUP_SECONDS STEADY_SECONDS` spins in
// startup_phase, then in steady_phase, and prints how long each took (seconds, from main's
// start), so that a test can compare the share of samples in the startup phase with its share
// of the run.
#include <chrono>
#include <cstdio>
#include <cstdlib>

static volatile double sink;

using Clock = std::chrono::steady_clock;

__attribute__((noinline)) void startup_phase(Clock::time_point end) {
    double acc = 0;
    while (Clock::now() < end)
        for (int i = 0; i < 1000; i++) acc += i * 0.5;
    sink = acc;
}

__attribute__((noinline)) void steady_phase(Clock::time_point end) {
    double acc = 0;
    while (Clock::now() < end)
        for (int i = 0; i < 1000; i++) acc += i * 0.25;
    sink = acc;
}

int main(int argc, char** argv) {
    auto start = Clock::now();
    double a = argc > 1 ? atof(argv[1]) : 0.2, b = argc > 2 ? atof(argv[2]) : 0.6;
    startup_phase(start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a)));
    auto mid = Clock::now();
    steady_phase(mid + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(b)));
    auto end = Clock::now();
    printf("%f %f\n", std::chrono::duration<double>(mid - start).count(), std::chrono::duration<double>(end - mid).count());
    return 0;
}
