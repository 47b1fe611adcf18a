/* Calls into lld_lib.c's library for about half a second. */
void lld_outer(unsigned long n);

int main(void) {
    for (int i = 0; i < 400; i++) lld_outer(1000000);
    return 0;
}
