// A test runtime for the GDB JIT interface: it "compiles" functions into executable memory and
// registers each with an in-memory ELF symbol file, as LLVM, Mono or ART do.
//
//   jitrt gdb SECONDS     jit_first runs for SECONDS, is unregistered, and jit_second takes the
//                         same memory for SECONDS (GDB's descriptor).
//   jitrt art SECONDS     the same with ART's descriptor (magic Android2, sequence locks,
//                         registration timestamps); registering jit_second holds the lock odd
//                         for 300 ms with a half-made entry on the list, and one in-memory dex
//                         file is listed on __dex_debug_descriptor. JITRT_ART_MAGIC picks the
//                         magic (Android1 or Android2).
//   jitrt none SECONDS    exports the descriptor, spins in C for SECONDS, registers nothing.
//   jitrt object FILE SECONDS
//                         loads the allocated sections of a relocatable object (tests/programs/
//                         jitcode.c built -c -g) into memory, sets their addresses in the image,
//                         registers the image (as LLVM does) and calls its jit_hot for SECONDS.
//   jitrt many N CALLS    registers N functions (jit_fn_0 ...), each in memory of its own;
//                         after each registration, CALLS calls over those registered so far.
//   jitrt flood N BYTES SECONDS
//                         a hostile runtime: registers N entries whose symbol file is one image
//                         of BYTES bytes (a valid ELF image, zero-padded), then spins in C for
//                         SECONDS.
//
// Prints `phase NAME START_NS END_NS` (CLOCK_MONOTONIC) for each function's run. With
// JITRT_NOT_DUMPABLE set, it makes itself non-dumpable first (its memory unreadable to others).
#define _GNU_SOURCE
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

struct jit_code_entry {
    struct jit_code_entry *next_entry;
    struct jit_code_entry *prev_entry;
    const char *symfile_addr;
    uint64_t symfile_size;
    // ART's fields (read only when the descriptor says Android2).
    uint64_t register_timestamp;
    volatile uint32_t seqlock;
};

struct jit_descriptor {
    uint32_t version;
    uint32_t action_flag;
    struct jit_code_entry *relevant_entry;
    struct jit_code_entry *first_entry;
    // ART's fields.
    uint8_t magic[8];
    uint32_t flags;
    uint32_t sizeof_descriptor;
    uint32_t sizeof_entry;
    volatile uint32_t seqlock;
    uint64_t action_timestamp;
};

enum { JIT_NOACTION = 0, JIT_REGISTER_FN, JIT_UNREGISTER_FN };

struct jit_descriptor __jit_debug_descriptor = {1, 0, 0, 0, {0}, 0, 0, 0, 0, 0};
// ART lists in-memory dex files the same way.
struct jit_descriptor __dex_debug_descriptor = {1, 0, 0, 0, {0}, 0, 0, 0, 0, 0};

void __attribute__((noinline)) __jit_debug_register_code(void) { __asm__ volatile("" ::: "memory"); }

static int art;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

static void lock(void) {
    if (art) {
        __atomic_add_fetch(&__jit_debug_descriptor.seqlock, 1, __ATOMIC_SEQ_CST);
    }
}

static void unlock(void) {
    if (art) {
        __jit_debug_descriptor.action_timestamp = now_ns();
        __atomic_add_fetch(&__jit_debug_descriptor.seqlock, 1, __ATOMIC_SEQ_CST);
    }
}

// An ELF image naming one function at `addr`: ELF header, section headers (null, .text as
// NOBITS at the code's address, .symtab, .strtab, .shstrtab), as ART's JIT symbol files are.
static char *make_symfile(const char *name, uint64_t addr, uint64_t size, uint64_t *len) {
    static const char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab";
    char strtab[128];
    size_t strtab_len = 1 + (size_t)snprintf(strtab + 1, sizeof strtab - 1, "%s", name) + 1;
    strtab[0] = 0;
    Elf64_Sym syms[2];
    memset(syms, 0, sizeof syms);
    syms[1].st_name = 1;
    syms[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
    syms[1].st_shndx = 1;
    syms[1].st_value = addr;
    syms[1].st_size = size;
    size_t off_sym = sizeof(Elf64_Ehdr);
    size_t off_str = off_sym + sizeof syms;
    size_t off_shstr = off_str + strtab_len;
    size_t off_sh = (off_shstr + sizeof shstr + 7) & ~(size_t)7;
    size_t total = off_sh + 5 * sizeof(Elf64_Shdr);
    char *img = calloc(1, total);
    Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
    memcpy(eh->e_ident, ELFMAG, SELFMAG);
    eh->e_ident[EI_CLASS] = ELFCLASS64;
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_ident[EI_VERSION] = EV_CURRENT;
    eh->e_type = ET_DYN;
#if defined(__x86_64__)
    eh->e_machine = EM_X86_64;
#else
    eh->e_machine = EM_AARCH64;
#endif
    eh->e_version = EV_CURRENT;
    eh->e_ehsize = sizeof(Elf64_Ehdr);
    eh->e_shoff = off_sh;
    eh->e_shentsize = sizeof(Elf64_Shdr);
    eh->e_shnum = 5;
    eh->e_shstrndx = 4;
    memcpy(img + off_sym, syms, sizeof syms);
    memcpy(img + off_str, strtab, strtab_len);
    memcpy(img + off_shstr, shstr, sizeof shstr);
    Elf64_Shdr *sh = (Elf64_Shdr *)(img + off_sh);
    sh[1] = (Elf64_Shdr){.sh_name = 1, .sh_type = SHT_NOBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
                         .sh_addr = addr, .sh_size = size, .sh_addralign = 16};
    sh[2] = (Elf64_Shdr){.sh_name = 7, .sh_type = SHT_SYMTAB, .sh_offset = off_sym, .sh_size = sizeof syms,
                         .sh_link = 3, .sh_info = 1, .sh_entsize = sizeof(Elf64_Sym), .sh_addralign = 8};
    sh[3] = (Elf64_Shdr){.sh_name = 15, .sh_type = SHT_STRTAB, .sh_offset = off_str, .sh_size = strtab_len,
                         .sh_addralign = 1};
    sh[4] = (Elf64_Shdr){.sh_name = 23, .sh_type = SHT_STRTAB, .sh_offset = off_shstr, .sh_size = sizeof shstr,
                         .sh_addralign = 1};
    *len = total;
    return img;
}

static struct jit_code_entry *register_code(const char *symfile, uint64_t size, int hold_ms) {
    struct jit_code_entry *e = calloc(1, sizeof *e);
    lock();
    e->seqlock = 0;
    e->next_entry = __jit_debug_descriptor.first_entry;
    if (e->next_entry) e->next_entry->prev_entry = e;
    __jit_debug_descriptor.first_entry = e;
    if (hold_ms) {
        // A slow writer: the entry is on the list but not filled in yet.
        static const char torn[] = "TORN: not a symbol file";
        e->symfile_addr = torn;
        e->symfile_size = sizeof torn;
        usleep(hold_ms * 1000);
    }
    e->symfile_addr = symfile;
    e->symfile_size = size;
    e->register_timestamp = now_ns();
    __jit_debug_descriptor.relevant_entry = e;
    __jit_debug_descriptor.action_flag = JIT_REGISTER_FN;
    unlock();
    __jit_debug_register_code();
    return e;
}

static void unregister_code(struct jit_code_entry *e) {
    lock();
    if (art) e->seqlock++;  // Android2: odd once removed
    if (e->prev_entry) e->prev_entry->next_entry = e->next_entry;
    else __jit_debug_descriptor.first_entry = e->next_entry;
    if (e->next_entry) e->next_entry->prev_entry = e->prev_entry;
    __jit_debug_descriptor.relevant_entry = e;
    __jit_debug_descriptor.action_flag = JIT_UNREGISTER_FN;
    unlock();
    __jit_debug_register_code();
}

// Two loops of different code: count down from the argument, then return.
#if defined(__x86_64__)
static const unsigned char code_first[] = {0x89, 0xf9, 0xff, 0xc9, 0x75, 0xfc, 0xc3};  // mov ecx,edi; 1: dec ecx; jnz 1b; ret
static const unsigned char code_second[] = {0x89, 0xf9, 0x83, 0xe9, 0x01, 0x75, 0xfb, 0xc3};  // sub ecx,1
#elif defined(__aarch64__)
static const unsigned char code_first[] = {0x00, 0x04, 0x00, 0x71, 0xe1, 0xff, 0xff, 0x54, 0xc0, 0x03, 0x5f, 0xd6};
static const unsigned char code_second[] = {0x00, 0x04, 0x00, 0x51, 0x1f, 0x00, 0x00, 0x71, 0xc1, 0xff, 0xff, 0x54,
                                            0xc0, 0x03, 0x5f, 0xd6};
#else
#error "jitrt knows x86_64 and aarch64 code"
#endif

typedef void (*fn_t)(int);

static void load(char *mem, const unsigned char *code, size_t n) {
    mprotect(mem, 4096, PROT_READ | PROT_WRITE);
    memset(mem, 0xcc, 4096);
    memcpy(mem, code, n);
    mprotect(mem, 4096, PROT_READ | PROT_EXEC);
    __builtin___clear_cache(mem, mem + n);
}

static void run_for(const char *name, fn_t f, double seconds) {
    uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9);
    while (now_ns() < end) f(200000);
    printf("phase %s %llu %llu\n", name, (unsigned long long)start, (unsigned long long)now_ns());
    fflush(stdout);
}

// The object's allocated sections copied into executable memory, their addresses written into
// the image's section headers; returns the address of `name`.
static void *load_object(char *img, const char *name) {
    Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
    Elf64_Shdr *sh = (Elf64_Shdr *)(img + eh->e_shoff);
    size_t total = 0;
    for (int i = 0; i < eh->e_shnum; i++)
        if (sh[i].sh_flags & SHF_ALLOC) total += (sh[i].sh_size + 63) & ~(size_t)63;
    char *mem = mmap(0, total + 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    size_t at = 0;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (!(sh[i].sh_flags & SHF_ALLOC)) continue;
        if (sh[i].sh_type != SHT_NOBITS) memcpy(mem + at, img + sh[i].sh_offset, sh[i].sh_size);
        sh[i].sh_addr = (uint64_t)(uintptr_t)(mem + at);
        at += (sh[i].sh_size + 63) & ~(size_t)63;
    }
    __builtin___clear_cache(mem, mem + at);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB) continue;
        Elf64_Sym *syms = (Elf64_Sym *)(img + sh[i].sh_offset);
        const char *strs = img + sh[sh[i].sh_link].sh_offset;
        for (size_t j = 0; j < sh[i].sh_size / sizeof(Elf64_Sym); j++)
            if (!strcmp(strs + syms[j].st_name, name)) return (char *)(uintptr_t)sh[syms[j].st_shndx].sh_addr + syms[j].st_value;
    }
    return 0;
}

typedef unsigned (*hot_t)(unsigned);

static unsigned __attribute__((noinline)) call_jit(hot_t f) {
    unsigned r = f(1000000);
    __asm__ volatile("" ::: "memory");
    return r;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: jitrt gdb|art|none SECONDS | jitrt many N CALLS\n");
        return 2;
    }
    const char *mode = argv[1];
    if (getenv("JITRT_NOT_DUMPABLE")) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (!strcmp(mode, "none")) {
        double seconds = atof(argv[2]);
        uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
        volatile uint64_t x = 0;
        while (now_ns() < end) x++;
        return 0;
    }
    if (!strcmp(mode, "object")) {
        FILE *f = fopen(argv[2], "rb");
        if (!f || argc < 4) return 2;
        static char img[1 << 20];
        size_t len = fread(img, 1, sizeof img, f);
        fclose(f);
        hot_t hot = (hot_t)load_object(img, "jit_hot");
        if (!hot) return 3;
        char *sym = malloc(len);
        memcpy(sym, img, len);
        register_code(sym, len, 0);
        uint64_t start = now_ns(), end = start + (uint64_t)(atof(argv[3]) * 1e9);
        unsigned x = 0;
        while (now_ns() < end) x += call_jit(hot);
        volatile unsigned sink = x;
        (void)sink;
        printf("phase jit_hot %llu %llu\n", (unsigned long long)start, (unsigned long long)now_ns());
        return 0;
    }
    if (!strcmp(mode, "flood")) {
        if (argc < 5) return 2;
        long n = atol(argv[2]);
        uint64_t bytes = strtoull(argv[3], 0, 10), len;
        char *img = make_symfile("jit_flood", 0x1000, 16, &len);
        char *big = calloc(1, bytes > len ? bytes : len);
        memcpy(big, img, len);
        for (long i = 0; i < n; i++) register_code(big, bytes > len ? bytes : len, 0);
        uint64_t start = now_ns(), end = start + (uint64_t)(atof(argv[4]) * 1e9);
        volatile uint64_t x = 0;
        while (now_ns() < end) x++;
        printf("phase flood %llu %llu\n", (unsigned long long)start, (unsigned long long)now_ns());
        return 0;
    }
    if (!strcmp(mode, "many")) {
        // A fixed amount of work: after registering each function, CALLS calls spread over
        // the functions registered so far.
        int n = atoi(argv[2]);
        int calls = argc > 3 ? atoi(argv[3]) : 100;
        size_t slot = 64, size = ((size_t)n * slot + 4095) & ~(size_t)4095;
        char *mem = mmap(0, size, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uint64_t start = now_ns();
        for (int i = 0; i < n; i++) {
            char *at = mem + (size_t)i * slot;
            memcpy(at, code_first, sizeof code_first);
            __builtin___clear_cache(at, at + slot);
            char name[32];
            snprintf(name, sizeof name, "jit_fn_%d", i);
            uint64_t len;
            char *sym = make_symfile(name, (uint64_t)(uintptr_t)at, sizeof code_first, &len);
            register_code(sym, len, 0);
            for (int c = 0; c < calls; c++) ((fn_t)(mem + (size_t)(c % (i + 1)) * slot))(2000);
        }
        printf("phase many %llu %llu\n", (unsigned long long)start, (unsigned long long)now_ns());
        return 0;
    }
    art = !strcmp(mode, "art");
    if (!art && strcmp(mode, "gdb")) {
        fprintf(stderr, "jitrt: unknown mode %s\n", mode);
        return 2;
    }
    if (art) {
        const char *magic = getenv("JITRT_ART_MAGIC") ? getenv("JITRT_ART_MAGIC") : "Android2";
        memcpy(__jit_debug_descriptor.magic, magic, 8);
        __jit_debug_descriptor.sizeof_descriptor = sizeof __jit_debug_descriptor;
        __jit_debug_descriptor.sizeof_entry = sizeof(struct jit_code_entry);
        memcpy(&__dex_debug_descriptor, &__jit_debug_descriptor, sizeof __dex_debug_descriptor);
        static const char dex[112] = "dex\n035";
        struct jit_code_entry *d = calloc(1, sizeof *d);
        d->symfile_addr = dex;
        d->symfile_size = sizeof dex;
        d->register_timestamp = now_ns();
        __dex_debug_descriptor.first_entry = d;
        __dex_debug_descriptor.relevant_entry = d;
        __dex_debug_descriptor.action_flag = JIT_REGISTER_FN;
    }
    double seconds = atof(argv[2]);
    char *mem = mmap(0, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint64_t len;

    load(mem, code_first, sizeof code_first);
    char *sym = make_symfile("jit_first", (uint64_t)(uintptr_t)mem, sizeof code_first, &len);
    struct jit_code_entry *e = register_code(sym, len, 0);
    run_for("jit_first", (fn_t)mem, seconds);
    unregister_code(e);

    load(mem, code_second, sizeof code_second);
    sym = make_symfile("jit_second", (uint64_t)(uintptr_t)mem, sizeof code_second, &len);
    e = register_code(sym, len, art ? 300 : 0);
    run_for("jit_second", (fn_t)mem, seconds);
    unregister_code(e);
    return 0;
}
