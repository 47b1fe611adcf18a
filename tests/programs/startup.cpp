// An app with a startup phase: `startup STARTUP_SECONDS STEADY_SECONDS` spins in
// startup_phase, then in steady_phase, and prints how long each took (seconds, from main's
// start), then the CPU time each used, so that a test can compare the share of samples in the
// startup phase with its share of the work (a busy machine gives a phase less CPU than time),
// then the CPU time the process had used when main() started.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

static double cpu_seconds() {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

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
    double cpu_start = cpu_seconds();
    double a = argc > 1 ? atof(argv[1]) : 0.2, b = argc > 2 ? atof(argv[2]) : 0.6;
    startup_phase(start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a)));
    auto mid = Clock::now();
    double cpu_mid = cpu_seconds();
    steady_phase(mid + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(b)));
    auto end = Clock::now();
    double cpu_end = cpu_seconds();
    printf("%f %f %f %f %f\n", std::chrono::duration<double>(mid - start).count(),
           std::chrono::duration<double>(end - mid).count(), cpu_mid - cpu_start, cpu_end - cpu_mid, cpu_start);
    return 0;
}
