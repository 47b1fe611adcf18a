// Runs a function of a library stored in an APK, mapped straight from the APK file as Android
// maps it: `apkrun APK OFFSET SIZE VADDR SECONDS` maps SIZE bytes of APK at OFFSET (a page
// boundary) and calls the function at VADDR of the library until SECONDS have passed.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: apkrun APK OFFSET SIZE VADDR SECONDS\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    long offset = strtol(argv[2], 0, 0), size = strtol(argv[3], 0, 0), vaddr = strtol(argv[4], 0, 0);
    char* base = mmap(0, size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, offset);
    if (fd < 0 || base == MAP_FAILED) {
        perror(argv[1]);
        return 1;
    }
    long (*hot)(long) = (long (*)(long))(base + vaddr);
    double end = now() + atof(argv[5]);
    while (now() < end) hot(1000000);
    return 0;
}
