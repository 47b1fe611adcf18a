// An app recording one code path of its own through simpleperf's app API, for tests: the steps
// and the command line of the C++ API's ProfileSession (simpleperf/app_api/cpp/simpleperf.cpp),
// written for this test from its documented behaviour. The device's folders are arguments, as
// a test emulates the device in a sandbox:
//
//   app_api TMP_DIR APP_DATA_DIR EVENT
//
// It finds TMP_DIR/simpleperf, copies it into APP_DATA_DIR and runs the copy once with no
// arguments (which must succeed), creates APP_DATA_DIR/simpleperf_data, starts
// `simpleperf record --log-to-android-buffer --log debug --stdio-controls-profiling --in-app
// --tracepoint-events /data/local/tmp/tracepoint_events -o perf-MM-DD-HH-MM-SS.data -e EVENT
// -f 4000 -p PID --call-graph fp` there with its stdin and stdout on pipes, waits for
// `started`, runs recorded_first, pauses (`pause` answered `ok`), runs while_paused, resumes,
// runs recorded_again, then stops the recorder with SIGINT and checks that it exited 0.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int control_fd = -1, reply_fd = -1;

static void fail(const char* what) {
    fprintf(stderr, "app_api: %s\n", what);
    exit(1);
}

static volatile unsigned long sink;

__attribute__((noinline)) static void tick(void) { __asm__ volatile(""); }

// A fixed amount of work (about half a second of CPU time), so that each phase gets its share of
// the CPU-time samples however busy the machine is. It calls tick now and then: a function that
// calls none may keep no frame, and its caller would then be missing from frame-pointer chains.
__attribute__((noinline)) static void spin(void) {
    for (unsigned long i = 0; i < 1500000000UL; i++) {
        sink += i;
        if ((i & 0xfffff) == 0) tick();
    }
}

// Each phase does something after spinning, so that its call is no tail call and its frame
// shows in the call chains.
__attribute__((noinline)) void recorded_first(void) { spin(); sink++; }
__attribute__((noinline)) void while_paused(void) { spin(); sink++; }
__attribute__((noinline)) void recorded_again(void) { spin(); sink++; }

static void read_reply(char* out, size_t size) {
    size_t n = 0;
    char c;
    while (read(reply_fd, &c, 1) == 1 && c != '\n') {
        if (n + 1 < size) out[n++] = c;
    }
    out[n] = 0;
}

static void send_cmd(const char* cmd) {
    char line[64], reply[64];
    snprintf(line, sizeof line, "%s\n", cmd);
    if (write(control_fd, line, strlen(line)) != (ssize_t)strlen(line)) fail("cannot send a command");
    read_reply(reply, sizeof reply);
    if (strcmp(reply, "ok") != 0) {
        fprintf(stderr, "app_api: %s answered '%s'\n", cmd, reply);
        exit(1);
    }
}

int main(int argc, char** argv) {
    if (argc != 4) fail("usage: app_api TMP_DIR APP_DATA_DIR EVENT");
    char from[4096], to[4096], data_dir[4096], cmd[8300];
    snprintf(from, sizeof from, "%s/simpleperf", argv[1]);
    snprintf(to, sizeof to, "%s/simpleperf", argv[2]);
    snprintf(data_dir, sizeof data_dir, "%s/simpleperf_data", argv[2]);
    if (access(from, X_OK) != 0) fail("no simpleperf in the temporary folder: run api prepare");
    snprintf(cmd, sizeof cmd, "cp %s %s", from, to);
    if (system(cmd) != 0) fail("cannot copy simpleperf into the app's folder");
    if (system(to) != 0) fail("the copied simpleperf does not run");
    mkdir(data_dir, 0700);

    int control[2], reply[2];
    if (pipe(control) || pipe(reply)) fail("pipe");
    char output[64], event[64], freq[] = "4000", pid[16];
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    snprintf(output, sizeof output, "perf-%02d-%02d-%02d-%02d-%02d.data", tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec);
    snprintf(event, sizeof event, "%s", argv[3]);
    snprintf(pid, sizeof pid, "%d", getpid());
    char* args[] = {to, "record", "--log-to-android-buffer", "--log", "debug",
                    "--stdio-controls-profiling", "--in-app", "--tracepoint-events",
                    "/data/local/tmp/tracepoint_events", "-o", output, "-e", event, "-f", freq,
                    "-p", pid, "--call-graph", "fp", NULL};
    pid_t child = fork();
    if (child == -1) fail("fork");
    if (child == 0) {
        close(control[1]);
        dup2(control[0], 0);
        close(control[0]);
        close(reply[0]);
        dup2(reply[1], 1);
        close(reply[1]);
        if (chdir(data_dir) != 0) _exit(1);
        execvp(args[0], args);
        _exit(127);
    }
    close(control[0]);
    control_fd = control[1];
    close(reply[1]);
    reply_fd = reply[0];
    char started[64];
    read_reply(started, sizeof started);
    if (strcmp(started, "started") != 0) fail("the recorder did not say started");

    recorded_first();
    send_cmd("pause");
    while_paused();
    send_cmd("resume");
    recorded_again();

    if (kill(child, SIGINT) != 0) fail("cannot stop the recorder");
    int status;
    if (waitpid(child, &status, 0) != child) fail("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "app_api: the recorder exited with status 0x%x\n", status);
        return 1;
    }
    printf("recorded %s\n", output);
    return 0;
}
