/* A library to link with lld, whose layout puts the code's first bytes on the same page of the
 * file as the read-only data before it: the code segment is mapped one page above where its
 * file offset would put it. Built without frame pointers, so that only its CFI unwinds it. */
volatile unsigned long lld_sink;

__attribute__((noinline)) void lld_leaf(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) lld_sink += i * i;
}

__attribute__((noinline)) void lld_middle(unsigned long n) {
    lld_leaf(n);
    lld_sink++;
}

__attribute__((noinline)) void lld_outer(unsigned long n) {
    lld_middle(n);
    lld_sink++;
}
