// Code for jitrt's `object` mode: compiled to a relocatable object (-g), loaded into memory and
// registered as LLVM registers what it compiled. mix() is inlined into jit_hot().
static inline __attribute__((always_inline)) unsigned mix(unsigned x) {
    return (x * 2654435761u) ^ (x >> 13);  // MIX_LINE
}

unsigned jit_hot(unsigned n) {
    unsigned acc = 0;
    for (unsigned i = 0; i < n; i++) acc += mix(i + acc);
    return acc;
}
