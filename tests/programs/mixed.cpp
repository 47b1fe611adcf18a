// A multi-threaded workload whose time spreads over several functions and shared libraries
// (the program itself, libm, libc, libstdc++), for comparing reports with Linux perf.
//
// Usage: mixed [seconds=1] [threads=2]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

static volatile double dsink;
static volatile size_t zsink;

extern "C" __attribute__((noinline)) double own_arith(long n) {
    double acc = 0;
    for (long i = 0; i < n; i++) acc += (double)(i % 7) * 1.0001 - (double)(i % 3);
    return acc;
}

extern "C" __attribute__((noinline)) double use_libm(long n) {
    double acc = 0;
    for (long i = 1; i < n; i++) acc += std::exp(1.0 / (double)i) + std::log((double)i);
    return acc;
}

extern "C" __attribute__((noinline)) size_t use_libc(std::vector<char>& a, std::vector<char>& b) {
    size_t s = 0;
    for (int r = 0; r < 20; r++) {
        memset(a.data(), r, a.size());
        memcpy(b.data(), a.data(), a.size());
        s += (size_t)b[r];
    }
    return s;
}

extern "C" __attribute__((noinline)) size_t use_libstdcxx(long n) {
    size_t s = 0;
    for (long i = 0; i < n; i++) {
        std::string str = std::to_string(i * 7919) + "-" + std::to_string(i);
        s += std::hash<std::string>{}(str);
    }
    return s;
}

extern "C" __attribute__((noinline)) void worker(double seconds) {
    std::vector<char> a(1 << 20), b(1 << 20);
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
        dsink = own_arith(300000);
        dsink = use_libm(100000);
        zsink = use_libc(a, b);
        zsink = use_libstdcxx(20000);
    }
}

int main(int argc, char** argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    std::vector<std::thread> pool;
    for (int i = 1; i < threads; i++) pool.emplace_back(worker, seconds);
    worker(seconds);
    for (auto& t : pool) t.join();
    return 0;
}
