//! Fuzzes rperf's readers of ELF files: symbol tables, MiniDebugInfo, DWARF lines and inline
//! frames (compressed sections inflated under bounds, compile units nested without bound left
//! out) and unwind tables. Any input must give names or nothing; never a panic, a stack
//! overflow or an allocation past what the bounds allow.
//!
//! cargo +nightly fuzz run -O debug_file fuzz/seeds/debug_file -- -rss_limit_mb=512 -timeout=10
//! (the seeds are `fuzz/seeds/make_debug_files.py`'s: a zstd section inflating past its size,
//! a zlib section declaring a terabyte, and inlined subroutines nested 2,000 deep)
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(map) = rperf_perfdata::mapped::map_bytes(data) else { return };
    let path = std::path::Path::new("fuzzed.debug");
    if let Ok(elf) = rperf_symbols::ElfInfo::from_mapped(path, map.clone()) {
        let _ = elf.symbols().lookup(0x1000);
    }
    if let Some(debug) = rperf_symbols::DebugInfo::from_map(path, map) {
        for addr in [0x0, 0x1000, 0x1010, 0x401000, u64::MAX] {
            let _ = debug.frames(addr);
        }
    }
    let _ = rperf_unwind::UnwindSections::from_elf(data);
    let _ = rperf_symbols::notes::take();
});
