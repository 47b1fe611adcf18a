// Context-switch-heavy workload: two threads bounce a byte over a pair of pipes N times.
//
// Usage: pingpong [rounds=100000]
#include <unistd.h>

#include <cstdlib>
#include <thread>

static int ab[2], ba[2];

extern "C" __attribute__((noinline)) void pong(long rounds) {
    char c;
    for (long i = 0; i < rounds; i++) {
        if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1) abort();
    }
}

extern "C" __attribute__((noinline)) void ping(long rounds) {
    char c = 'p';
    for (long i = 0; i < rounds; i++) {
        if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) abort();
    }
}

int main(int argc, char** argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 100000;
    if (pipe(ab) != 0 || pipe(ba) != 0) return 1;
    std::thread t(pong, rounds);
    ping(rounds);
    t.join();
    return 0;
}
