// Off-CPU test workload: a spinner thread burns CPU in spin_work() and, from time to time,
// holds a mutex and writes to a pipe; a sleeper thread blocks in three known ways:
// do_nanosleep() (nanosleep), lock_mutex() (waits for the mutex the spinner holds) and
// read_pipe() (a blocking read until the spinner writes).
//
// Usage: offcpu [seconds=1]
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <thread>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int pipefd[2];
static std::atomic<bool> done{false};
static volatile unsigned long sink;

extern "C" __attribute__((noinline)) void spin_work(double ms) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
    unsigned long x = 0;
    while (std::chrono::steady_clock::now() < end)
        for (int i = 0; i < 1000; i++) x += i * i;
    sink = x;
}

extern "C" __attribute__((noinline)) void spinner(double seconds) {
    pthread_setname_np(pthread_self(), "spinner");
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
        pthread_mutex_lock(&mu);
        spin_work(10);
        pthread_mutex_unlock(&mu);
        spin_work(10);
        char c = 'x';
        if (write(pipefd[1], &c, 1) != 1) abort();
    }
    done = true;
    char c = 'q';
    if (write(pipefd[1], &c, 1) != 1) abort();
}

extern "C" __attribute__((noinline)) void do_nanosleep() {
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, nullptr);
}

extern "C" __attribute__((noinline)) void lock_mutex() {
    pthread_mutex_lock(&mu);
    pthread_mutex_unlock(&mu);
}

extern "C" __attribute__((noinline)) void read_pipe() {
    char c;
    if (read(pipefd[0], &c, 1) != 1) abort();
}

extern "C" __attribute__((noinline)) void sleeper() {
    pthread_setname_np(pthread_self(), "sleeper");
    while (!done) {
        do_nanosleep();
        lock_mutex();
        read_pipe();
    }
}

int main(int argc, char** argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    if (pipe(pipefd) != 0) return 1;
    std::thread s(spinner, seconds);
    std::thread b(sleeper);
    s.join();
    b.join();
    return 0;
}
