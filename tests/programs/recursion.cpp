// Deep recursion for unwinding benchmarks: each round recurses 20 to 80 frames deep (a
// pseudo-random depth), each frame holding a 256-byte buffer, and spins at the bottom; at 80
// frames the stack is about 27 KiB deep. Runs for argv[1] seconds.
#include <chrono>
#include <cstdint>
#include <cstdlib>

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t spin(uint64_t n) {
    uint64_t x = n;
    for (uint64_t i = 0; i < 20000; i++) x = x * 6364136223846793005u + 1442695040888963407u;
    return x;
}

__attribute__((noinline)) static uint64_t descend(int depth, uint64_t seed) {
    volatile unsigned char frame[256];
    frame[depth & 255] = static_cast<unsigned char>(seed);
    uint64_t r = depth == 0 ? spin(seed) : descend(depth - 1, seed * 31 + depth);
    return r + frame[depth & 255];
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    uint64_t seed = 1;
    while (std::chrono::steady_clock::now() < end) {
        seed = seed * 2862933555777941757u + 3037000493u;
        int depth = 20 + static_cast<int>((seed >> 33) % 61);
        sink = descend(depth, seed);
    }
    return 0;
}
