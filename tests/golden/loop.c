// The program behind the golden recordings: no libc, so the recording and this binary are
// all a report needs. Built with:
//   gcc -O1 -g -fno-omit-frame-pointer -fasynchronous-unwind-tables -nostdlib -static -o loop loop.c
static volatile unsigned long sink;

__attribute__((noinline)) void leaf_a(void) {
    for (int i = 0; i < 1000; i++) sink += i;
}

__attribute__((noinline)) void leaf_b(void) {
    for (int i = 0; i < 3000; i++) sink += i * i;
}

__attribute__((noinline)) void middle(void) {
    leaf_a();
    leaf_b();
}

void _start(void) {
    for (long n = 0; n < 30000; n++) middle();
    __asm__ volatile("mov $60, %eax\n xor %edi, %edi\n syscall");
}
