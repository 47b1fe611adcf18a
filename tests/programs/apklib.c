// A native library for the APK test: stored uncompressed in an APK and mapped straight from it,
// as Android maps an app's libraries. Self-contained (no calls, no globals), so that it runs
// from a plain mapping without the dynamic linker.
__attribute__((noinline)) long hot_in_apk(long n) {
    volatile long acc = 0;
    for (long i = 0; i < n; i++) acc += i * 3;
    return acc;
}
