// A stand-in for Android's run-as, for tests: `run-as PKG CMD [ARGS...]` runs CMD as the app's
// user, in the app's data folder, as run-as does for debuggable apps. Installed setuid root by
// the test. Apps are files in APPS_DIR (set at build time), named after the package, holding
// "UID DATA_DIR DEBUGGABLE" (yes or no).
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: run-as PACKAGE COMMAND [ARGS...]\n");
        return 1;
    }
    if (strchr(argv[1], '/')) {
        fprintf(stderr, "run-as: invalid package name '%s'\n", argv[1]);
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", APPS_DIR, argv[1]);
    FILE* f = fopen(path, "r");
    unsigned uid;
    char dir[4096], debuggable[16];
    if (!f || fscanf(f, "%u %4095s %15s", &uid, dir, debuggable) != 3) {
        fprintf(stderr, "run-as: unknown package: %s\n", argv[1]);
        return 1;
    }
    if (strcmp(debuggable, "yes") != 0) {
        fprintf(stderr, "run-as: package not debuggable: %s\n", argv[1]);
        return 1;
    }
    if (setgroups(0, 0) || setgid(uid) || setuid(uid) || chdir(dir)) {
        perror("run-as");
        return 1;
    }
    execvp(argv[2], argv + 2);
    perror(argv[2]);
    return 1;
}
