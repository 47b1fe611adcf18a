// Target-lifecycle workload for rperf's tests.
//
// Usage:
//   spawner fork N PROGRAM [ARGS...]  fork N children one after another; each execs PROGRAM;
//                                     the parent spins in parent_spin while each child runs.
//   spawner threads N                 create and join N threads, 16 at a time; each is named
//                                     "worker" and spins about 1 ms in thread_spin.
//   spawner orphan SECONDS            fork a child that exits at once ("quick=PID"), and a
//                                     child that forks a grandchild and exits at once
//                                     ("parent=PID"); the grandchild ("child=PID"), which
//                                     execs nothing, spins SECONDS in orphan_spin. The main
//                                     process waits, sleeping, until it is done.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

extern "C" __attribute__((noinline)) void parent_spin(double seconds) {
    double end = now() + seconds;
    unsigned long x = 1;
    while (now() < end)
        for (int i = 0; i < 1000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

extern "C" __attribute__((noinline)) void thread_spin(double seconds) {
    double end = now() + seconds;
    unsigned long x = 3;
    while (now() < end)
        for (int i = 0; i < 1000; i++) x = x * 2862933555777941757UL + 3037000493UL;
    sink = x;
}

extern "C" __attribute__((noinline)) void orphan_spin(double seconds) {
    double end = now() + seconds;
    unsigned long x = 5;
    while (now() < end)
        for (int i = 0; i < 1000; i++) x = x * 3202034522624059733UL + 1;
    sink = x;
}

static void *worker(void *) {
    prctl(PR_SET_NAME, "worker");
    thread_spin(0.001);
    return nullptr;
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "fork")) {
        int n = atoi(argv[2]);
        for (int i = 0; i < n; i++) {
            pid_t pid = fork();
            if (pid == 0) {
                execv(argv[3], argv + 3);
                _exit(127);
            }
            parent_spin(0.001);
            int status;
            waitpid(pid, &status, 0);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "child %d failed\n", i);
                return 1;
            }
        }
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "threads")) {
        int n = atoi(argv[2]);
        for (int done = 0; done < n; done += 16) {
            pthread_t t[16];
            int k = n - done < 16 ? n - done : 16;
            for (int i = 0; i < k; i++) pthread_create(&t[i], nullptr, worker, nullptr);
            for (int i = 0; i < k; i++) pthread_join(t[i], nullptr);
        }
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "orphan")) {
        double seconds = atof(argv[2]);
        pid_t quick = fork();
        if (quick == 0) _exit(0);
        printf("quick=%d\n", quick);
        fflush(stdout);
        pid_t parent = fork();
        if (parent == 0) {
            pid_t child = fork();
            if (child == 0) {
                orphan_spin(seconds);
                _exit(0);
            }
            printf("parent=%d\nchild=%d\n", getpid(), child);
            fflush(stdout);
            _exit(0);
        }
        waitpid(quick, nullptr, 0);
        waitpid(parent, nullptr, 0);
        timespec rest = {(time_t)seconds + 1, 0};
        nanosleep(&rest, nullptr);
        return 0;
    }
    fprintf(stderr, "usage: spawner fork N PROGRAM [ARGS...] | spawner threads N | spawner orphan SECONDS\n");
    return 2;
}
