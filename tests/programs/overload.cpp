// Two overloads of one C++ function, hot in a 2:1 ratio: `overload SECONDS`. perf names both
// `work::spin`; simpleperf names them `work::spin(long)` and `work::spin(double)`.
#include <chrono>
#include <cstdlib>

static volatile double sink;

namespace work {
__attribute__((noinline)) void spin(long n) {
    double acc = 0;
    for (long i = 0; i < n; i++) acc += i * 0.5;
    sink = acc;
}
__attribute__((noinline)) void spin(double n) {
    double acc = 0;
    for (double i = 0; i < n; i += 1) acc += i * 0.25;
    sink = acc;
}
}  // namespace work

int main(int argc, char** argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
        work::spin(400000L);
        work::spin(200000.0);
    }
    return 0;
}
