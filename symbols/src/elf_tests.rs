//! ELF parsing, segments and symbol tables, checked on rperf's own test binary and hand-made
//! segment tables.

use super::*;

#[test]
fn segment_addresses_never_overflow() {
    let segs = [LoadSegment { vaddr: u64::MAX - 0x10, offset: 0x1000, filesz: 0x1000, exec: true }];
    assert_eq!(offset_to_vaddr(&segs, 0x1008), Some(u64::MAX - 8));
    assert_eq!(offset_to_vaddr(&segs, 0x1020), None);
    assert_eq!(offset_to_vaddr(&segs, 0x3000), None);
}

/// libLLVM.so's layout (lld): the code's first page of the file also holds the end of the
/// read-only data, which is mapped one page lower.
#[test]
fn an_executable_mapping_of_a_shared_page_is_the_code_segment() {
    let seg = |vaddr, offset, filesz, exec| LoadSegment { vaddr, offset, filesz, exec };
    let segs = [
        seg(0, 0, 0x449a9a4, false),
        seg(0x449b9a4, 0x449a9a4, 0x3ee331c, true),
        seg(0x837fcc0, 0x837dcc0, 0x1c34a8, false),
    ];
    assert_eq!(mapping_vaddr(&segs, 0x449a000), Some(0x449b000));
    assert_eq!(mapping_vaddr(&segs, 0x5000000), Some(0x5001000));
    // A page only a data segment holds.
    assert_eq!(mapping_vaddr(&segs, 0x1000), Some(0x1000));
    assert_eq!(mapping_vaddr(&segs, 0x9000000), None);
}

/// KiB of `map` resident in this process (its mapping's Rss in /proc/self/smaps).
fn resident_kib(map: &memmap2::Mmap) -> u64 {
    let start = format!("{:x}-", map.as_ptr() as usize);
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let block = smaps.lines().skip_while(|l| !l.starts_with(&start)).skip(1);
    let rss = block.take_while(|l| !l.contains('-')).find_map(|l| l.strip_prefix("Rss:"));
    rss.and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).expect("the mapping in smaps")
}

#[test]
fn symbol_table_pages_are_let_go_once_the_table_is_made() {
    let elf = ElfInfo::load(&std::env::current_exe().unwrap()).unwrap();
    let obj = object::File::parse(&elf.data[..]).unwrap();
    let range = |name| obj.section_by_name(name).and_then(|s| s.file_range()).unwrap();
    let (symtab, strtab) = (range(".symtab"), range(".strtab"));
    let pages = (symtab.1 + strtab.1) / 4096;
    assert!(pages >= 32, ".symtab and .strtab of {} and {} bytes", symtab.1, strtab.1);
    let sum = |(offset, size): (u64, u64)| {
        elf.data[offset as usize..(offset + size) as usize]
            .iter()
            .fold(0u64, |s, &x| s.rotate_left(5) ^ u64::from(x))
    };
    let read = (sum(symtab), sum(strtab));
    let before = resident_kib(&elf.data);
    let table = elf.symbols();
    let after = resident_kib(&elf.data);
    assert!(after + (pages - 4) * 4 <= before, "{before} KiB resident, {after} KiB once the table was made");
    // Names are read back from the file as they are looked up.
    let funcs: Vec<_> = obj.symbols().filter(|s| s.kind() == SymbolKind::Text && s.size() > 0).collect();
    let alone =
        |s: &&object::Symbol<'_, '_>| funcs.iter().filter(|o| o.address() == s.address()).count() == 1;
    let sym = funcs.iter().filter(alone).max_by_key(|s| s.size()).unwrap();
    assert_eq!(table.lookup(sym.address()).map(|s| s.name), sym.name().ok().map(String::from));
    assert_eq!((sum(symtab), sum(strtab)), read);
}

#[test]
fn unwind_tables_are_let_go_once_unwinding_ends() {
    let elf = ElfInfo::load(&std::env::current_exe().unwrap()).unwrap();
    let obj = object::File::parse(&elf.data[..]).unwrap();
    let (offset, size) = obj.section_by_name(".eh_frame").and_then(|s| s.file_range()).unwrap();
    let pages = size / 4096;
    assert!(pages >= 16, ".eh_frame of {size} bytes");
    // Unwinding reads the CFI: every page of it is touched.
    let sum = |b: &[u8]| b.iter().fold(0u64, |s, &x| s.rotate_left(5) ^ u64::from(x));
    let read = sum(&elf.data[offset as usize..(offset + size) as usize]);
    let before = resident_kib(&elf.data);
    elf.let_go_of_unwind_tables();
    let after = resident_kib(&elf.data);
    assert!(after + (pages - 2) * 4 <= before, "{before} KiB resident, {after} KiB after letting go");
    // What is read again reads back from the file.
    assert_eq!(sum(&elf.data[offset as usize..(offset + size) as usize]), read);
}
