//! Tests of the kept kernel symbols.

use super::*;
use std::os::unix::fs::MetadataExt;

fn kernel(text: &str) -> RunningKernel {
    RunningKernel { text: text.to_string(), index: text_symbol_index(text), ..Default::default() }
}

const TEXT: &str = "ffffffff81000000 T _text\nffffffff81000100 D data\nffffffff81000200 t work\n\
                    ffffffff81000300 T _etext\nffffffffc0002000 t bpf_prog_1_x\t[bpf]\n\
                    ffffffffc0001000 t ext4_read\t[ext4]\n";

#[test]
fn perfs_copy_is_searched_in_place_as_its_text_names_it() {
    // As /proc/kallsyms lists them: per-CPU symbols at zero, the core (data lines among
    // its text), then modules and BPF programs.
    let copy = "0000000000000000 A fixed_percpu_data\n0000000000001000 A cpu_number\n\
                ffffffff81000000 T _stext\nffffffff81000000 T _text\nffffffff81000100 t first\n\
                ffffffff81000180 D in_text_data\nffffffff81000200 T second\nffffffff81000200 W second_alias\n\
                ffffffff81000300 T _etext\nffffffff82000000 D data_after\n\
                ffffffffc0001000 t ext4_read\t[ext4]\nffffffffc0002000 t bpf_prog_1_x\t[bpf]\n";
    let map = rperf_perfdata::mapped::map_bytes(copy.as_bytes()).unwrap();
    let k = in_place(map.clone()).expect("a core with `_text`");
    assert_eq!(&copy[..k.lines.end], &copy[..copy.find("ffffffffc0001000").unwrap()]);
    assert_eq!(k.covered, Some((0xffffffff81000000, 0xffffffff81000300)));
    assert!(k.covers(&[0xffffffff81000250]) && !k.covers(&[0xffffffffc0001010]));
    // Named as a table of the core's text symbols names them.
    let core_text: String =
        copy.lines().filter(|l| l.starts_with("ffffffff81")).map(|l| format!("{l}\n")).collect();
    let addrs =
        [0xffffffff81000000, 0xffffffff81000150, 0xffffffff81000180, 0xffffffff81000250, 0xffffffff810002ff];
    let names = |k: &crate::KernelSymbols| {
        addrs.iter().map(|&a| k.table.lookup(a).map(|s| (s.name, s.start, s.end))).collect::<Vec<_>>()
    };
    let (a, b) = (k.symbols_for(&addrs), kernel(&core_text).symbols_for(&addrs));
    assert_eq!(names(&a), names(&b));
    assert_eq!(a.table.lookup(0xffffffff81000180).unwrap().name, "first");
    assert_eq!(a.table.lookup(0xffffffff81000150).unwrap().end, 0xffffffff81000200);
    // No core, or no `_text` in it: nothing to search.
    for bad in ["ffffffffc0001000 t ext4_read\t[ext4]\n", "", "ffffffff81000100 t first\n"] {
        let map = rperf_perfdata::mapped::map_bytes(bad.as_bytes()).unwrap();
        assert!(in_place(map).is_none(), "{bad}");
    }
}

#[test]
fn only_core_text_symbols_are_kept_and_they_cover_the_core_only() {
    let dir = std::env::temp_dir().join(format!("rperf-kallsyms-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let boot = BootKey("1234-abcd".into(), "6.1.0".into());
    std::fs::write(dir.join("kallsyms-old-boot"), "stale").unwrap();
    let live = kernel(TEXT);
    let held = crate::cache::Dir::open(&dir).unwrap();
    // What a first report gets: the kept core, mapped, and the other lines, named as the
    // whole text names them, module ones too.
    let first = keep(&held, &boot, TEXT.as_bytes()).expect("kept");
    assert!(first.covers(&[0xffffffff81000250, 0xffffffffc0001010]) && !first.cached);
    assert!(first.text.contains("ext4_read") && !first.text.contains("work"), "{}", first.text);
    let addrs = [0xffffffff81000250, 0xffffffffc0001010, 0xffffffffc0002004, 0xffffffff81000000];
    let named = |k: &crate::KernelSymbols| {
        let module = |a| k.module_of(a).map(str::to_string);
        addrs
            .iter()
            .map(|&a| (k.table.lookup(a).map(|s| (s.name, s.start, s.end)), module(a)))
            .collect::<Vec<_>>()
    };
    let (a, b) = (first.symbols_for(&addrs), live.symbols_for(&addrs));
    assert_eq!(named(&a), named(&b));
    assert_eq!(a.module_of(0xffffffffc0001010), Some("ext4"));
    // What the next reports read: the core's text symbols only.
    let path = dir.join("kallsyms-1234-abcd");
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
    assert!(!dir.join("kallsyms-old-boot").exists());
    let kept = read_kept(&held, "kallsyms-1234-abcd", &boot).expect("kept for this boot");
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(kept.cached && !file.contains("ext4") && !file.contains("bpf") && !file.contains("data"));
    assert!(kept.covers(&[0xffffffff81000250]));
    assert!(!kept.covers(&[0xffffffff81000250, 0xffffffffc0001010]));
    let addrs = [0xffffffff81000000, 0xffffffff81000250, 0xffffffff81000200, 0xffffffff81000001];
    let names = |k: &crate::KernelSymbols| {
        addrs.iter().map(|&a| k.table.lookup(a).map(|s| (s.name, s.start, s.end))).collect::<Vec<_>>()
    };
    assert_eq!(names(&kept.symbols_for(&addrs)), names(&live.symbols_for(&addrs)));
    assert_eq!(kept.symbols_for(&addrs).table.lookup(0xffffffff81000250).unwrap().name, "work");
    // Another boot's or kernel's file is not used.
    assert!(read_kept(&held, "kallsyms-1234-abcd", &BootKey("1234-abcd".into(), "6.2.0".into())).is_none());
    // Hidden addresses, and core symbols out of order, keep nothing (and replace nothing).
    let hidden = "0000000000000000 T _text\n".repeat(1200);
    let disordered = "ffffffff81000200 t work\nffffffff81000000 T _text\n";
    let other = BootKey("5678-ef".into(), "6.1.0".into());
    for text in [hidden.as_str(), disordered, ""] {
        assert!(keep(&held, &other, text.as_bytes()).is_none(), "{text:.60}");
        assert!(!dir.join("kallsyms-5678-ef").exists() && path.exists());
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no file left behind");
    std::fs::remove_dir_all(&dir).ok();
}

/// The kept symbols' snapshot against the one `TextTable` makes from the whole text, with
/// the same `_text` and `_etext`.
fn assert_kept_snapshots_as_the_whole_text(kept: &RunningKernel, text: &str, hits: &[u64]) {
    let table = crate::kallsyms::TextTable::read(text.as_bytes(), |_| {}).unwrap();
    let (start, end) = (kept.kept_text_start(), kept.kept_text_end());
    assert_eq!((start, end), (table.text_start, table.text_end));
    let hits: BTreeSet<u64> = hits.iter().copied().collect();
    let snap = kept.kept_snapshot(&hits, start, end).expect("every hit is in the kept core");
    assert_eq!(snap, table.snapshot(&hits), "hits {hits:x?}");
}

#[test]
fn kept_symbols_snapshot_as_the_whole_text_does() {
    // Aliases at one address (W and T), data among the text, lines at `_text` and `_etext`.
    let text = "0000000000000000 A fixed_percpu_data\nffffffff81000000 T srso_alias\n\
                ffffffff81000000 T _stext\nffffffff81000000 T _text\nffffffff81000100 t first\n\
                ffffffff81000180 D in_text_data\nffffffff81000200 T second\nffffffff81000200 W second_alias\n\
                ffffffff81000280 w weak_one\nffffffff81000300 T _etext\nffffffff81000300 t after_etext\n\
                ffffffff81000400 t init_text\nffffffff82000000 D data_after\n\
                ffffffffc0001000 t ext4_read\t[ext4]\nffffffffc0002000 t bpf_prog_1_x\t[bpf]\n";
    let hit_sets: [&[u64]; 6] = [
        &[],
        &[0xffffffff81000000],
        &[0xffffffff81000150, 0xffffffff81000180, 0xffffffff81000200],
        &[0xffffffff810001ff, 0xffffffff81000201, 0xffffffff81000290],
        &[0xffffffff81000300, 0xffffffff810003ff],
        &[0xffffffff81000001, 0xffffffff81000280, 0xffffffff81000350],
    ];
    // perf's copy, searched in place.
    let copy = in_place(rperf_perfdata::mapped::map_bytes(text.as_bytes()).unwrap()).unwrap();
    // rperf's own file, kept from the same text.
    let dir = tempfile::tempdir().unwrap();
    let held = crate::cache::Dir::open(dir.path()).unwrap();
    let boot = BootKey("1234-abcd".into(), "6.1.0".into());
    keep(&held, &boot, text.as_bytes()).expect("kept");
    let own = read_kept(&held, "kallsyms-1234-abcd", &boot).unwrap();
    for kept in [&copy, &own] {
        for hits in hit_sets {
            assert_kept_snapshots_as_the_whole_text(kept, text, hits);
        }
        // A module's address is named from /proc/kallsyms.
        let module: BTreeSet<u64> = [0xffffffff81000150, 0xffffffffc0001010].into_iter().collect();
        assert!(kept.kept_snapshot(&module, Some(0xffffffff81000000), None).is_none());
    }
    assert!(RunningKernel::default().kept_snapshot(&BTreeSet::new(), None, None).is_none());
}

#[test]
fn kept_symbols_of_this_kernel_snapshot_as_its_kallsyms_does() {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let held = crate::cache::Dir::open(dir.path()).unwrap();
    let boot = BootKey("1234-abcd".into(), "6.1.0".into());
    keep(&held, &boot, text.as_bytes()).expect("this kernel's addresses are shown to the tests (root)");
    let kept = read_kept(&held, "kallsyms-1234-abcd", &boot).unwrap();
    let (lo, hi) = kept.covered.unwrap();
    // Symbol starts, their ends, and addresses inside, over the whole core.
    let addrs: Vec<u64> = text
        .lines()
        .filter_map(|l| text_symbol(l).map(|s| s.0))
        .filter(|a| (lo..hi).contains(a))
        .step_by(97)
        .flat_map(|a| [a, a + 1, a + 0x13])
        .filter(|a| (lo..hi).contains(a))
        .collect();
    assert!(addrs.len() > 300, "{} addresses", addrs.len());
    assert_kept_snapshots_as_the_whole_text(&kept, &text, &addrs);
}
