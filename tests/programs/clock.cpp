// vDSO workload: reads the clock in a tight loop, so most samples land in the vDSO's
// clock_gettime. Runs for argv[1] seconds.
#include <cstdlib>
#include <ctime>

static volatile long sink;

extern "C" __attribute__((noinline)) void read_clocks(long n) {
    struct timespec ts;
    for (long i = 0; i < n; i++) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        sink += ts.tv_nsec;
    }
}

int main(int argc, char** argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        read_clocks(100000);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
    return 0;
}
