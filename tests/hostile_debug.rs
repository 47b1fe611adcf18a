//! Hostile debug files: a program is recorded, and a debug file made by hand for it (its build
//! id, in perf's build-id cache under a scratch `$HOME`) carries what an attacker would put
//! there: compressed sections that inflate to gigabytes, entries nested 20,000 deep. Reports in
//! every format and `annotate` must end cleanly, in bounded memory, and say what was left out.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// A program spinning in `spin`, built without debug info and recorded: its folder, the
/// binary and the recording.
fn recorded_spin(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = scratch(name);
    let src = dir.join("spin.c");
    std::fs::write(
        &src,
        "volatile unsigned long n;\n\
         __attribute__((noinline)) void spin(void) { for (unsigned long i = 0; i < 200000000UL; i++) n += i; }\n\
         int main(void) { spin(); return 0; }\n",
    )
    .unwrap();
    let exe = dir.join("spin");
    let o = run(Command::new("gcc")
        .args(["-O1", "-g0", "-fno-omit-frame-pointer", "-Wl,--build-id", "-o"])
        .arg(&exe)
        .arg(&src));
    assert!(o.status.success(), "gcc: {}", stderr(&o));
    let data = dir.join("perf.data");
    let o = run(rperf().args(["record", "-g", "fp", "-o"]).arg(&data).arg("--").arg(&exe));
    assert!(o.status.success(), "{}", stderr(&o));
    (dir, exe, data)
}

/// `spin`'s address and size in `exe`.
fn spin_range(exe: &Path) -> (u64, u64) {
    let o = run(Command::new("nm").arg("-S").arg(exe));
    let line = stdout(&o).lines().find(|l| l.ends_with(" spin")).map(str::to_owned).expect("spin in nm");
    let f: Vec<&str> = line.split_whitespace().collect();
    (u64::from_str_radix(f[0], 16).unwrap(), u64::from_str_radix(f[1], 16).unwrap())
}

/// A minimal ELF64 file of `sections` (name, flags, bytes), with `exe`'s build id.
fn debug_file(exe: &Path, sections: &[(&str, u64, Vec<u8>)]) -> Vec<u8> {
    let id = hex_bytes(&build_id_hex(exe));
    let mut note = Vec::new();
    for v in [4u32, id.len() as u32, 3] {
        note.extend_from_slice(&v.to_le_bytes());
    }
    note.extend_from_slice(b"GNU\0");
    note.extend_from_slice(&id);
    let mut all = vec![(".note.gnu.build-id", 0u64, note)];
    all.extend(sections.iter().map(|(n, f, b)| (*n, *f, b.clone())));
    let mut names = vec![0u8];
    let mut name_at = Vec::new();
    for (n, _, _) in all.iter().map(|s| (s.0, 0, 0)).chain([(".shstrtab", 0, 0)]) {
        name_at.push(names.len() as u32);
        names.extend_from_slice(n.as_bytes());
        names.push(0);
    }
    let mut body = vec![0u8; 64];
    let mut headers = vec![0u8; 64]; // the null section
    let mut put = |body: &mut Vec<u8>, name: u32, kind: u32, flags: u64, bytes: &[u8]| {
        while !body.len().is_multiple_of(8) {
            body.push(0);
        }
        let at = body.len() as u64;
        body.extend_from_slice(bytes);
        let mut h = Vec::new();
        h.extend_from_slice(&name.to_le_bytes());
        h.extend_from_slice(&kind.to_le_bytes());
        for v in [flags, 0, at, bytes.len() as u64] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h.extend_from_slice(&[0u8; 8]); // link, info
        h.extend_from_slice(&(if flags & 0x800 != 0 { 8u64 } else { 1 }).to_le_bytes());
        h.extend_from_slice(&0u64.to_le_bytes());
        headers.extend_from_slice(&h);
    };
    for (i, (name, flags, bytes)) in all.iter().enumerate() {
        let kind = if name.starts_with(".note") { 7 } else { 1 };
        put(&mut body, name_at[i], kind, *flags, bytes);
    }
    put(&mut body, *name_at.last().unwrap(), 3, 0, &names);
    while !body.len().is_multiple_of(8) {
        body.push(0);
    }
    let shoff = body.len() as u64;
    let count = (all.len() + 2) as u16;
    let mut head = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0".to_vec();
    head.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC, without program headers
    head.extend_from_slice(&62u16.to_le_bytes()); // x86_64
    head.extend_from_slice(&1u32.to_le_bytes());
    for v in [0u64, 0, shoff] {
        head.extend_from_slice(&v.to_le_bytes());
    }
    head.extend_from_slice(&0u32.to_le_bytes());
    for v in [64u16, 56, 0, 64, count, count - 1] {
        head.extend_from_slice(&v.to_le_bytes());
    }
    body[..64].copy_from_slice(&head);
    body.extend_from_slice(&headers);
    body
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
}

/// Places `bytes` as `exe`'s debug file in perf's build-id cache under `home`.
fn install(home: &Path, exe: &Path, bytes: &[u8]) {
    let id = build_id_hex(exe);
    let dir = home.join(".debug/.build-id").join(&id[..2]).join(&id[2..]);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("debug"), bytes).unwrap();
}

/// A zstd stream of `blocks` RLE blocks of 128 KiB of zeros each (4 bytes a block).
fn zstd_bomb(blocks: usize) -> Vec<u8> {
    let mut z = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let head = (131_072u32 << 3) | (1 << 1) | last;
        z.extend_from_slice(&head.to_le_bytes()[..3]);
        z.push(0);
    }
    z
}

/// A section compressed with zstd (ELFCOMPRESS_ZSTD) that declares `declared` bytes.
fn zstd_section(declared: u64, stream: &[u8]) -> Vec<u8> {
    let mut s = Vec::new();
    s.extend_from_slice(&2u32.to_le_bytes());
    s.extend_from_slice(&0u32.to_le_bytes());
    s.extend_from_slice(&declared.to_le_bytes());
    s.extend_from_slice(&1u64.to_le_bytes());
    s.extend_from_slice(stream);
    s
}

/// `rperf` with `args`, `home` as HOME, under a time limit: its output and peak memory (KiB).
fn limited(home: &Path, args: &[&str]) -> (Output, u64) {
    let o = run(Command::new("/usr/bin/time")
        .args(["-f", "peak-kib=%M", "timeout", "120"])
        .arg(env!("CARGO_BIN_EXE_rperf"))
        .args(args)
        .env("HOME", home)
        .env("RPERF_CACHE_DIR", home.join("cache"))
        .env_remove("DEBUGINFOD_URLS"));
    let err = stderr(&o);
    let peak = err.lines().find_map(|l| l.strip_prefix("peak-kib=")).and_then(|v| v.trim().parse().ok());
    (o, peak.unwrap_or_else(|| panic!("no peak from GNU time: {err}")))
}

/// Every output that reads debug info for inline frames or lines ends cleanly, under 256 MiB,
/// and says `note`; returns the text report.
fn survives(dir: &Path, data: &Path, note: &str) -> String {
    let home = dir.join("home");
    let input = data.to_str().unwrap();
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    let mut text = String::new();
    for args in [
        &["report", "--sort", "dso,symbol,srcline", "--inline", "-i", input][..],
        &["report", "--format", "pprof", "-o", out, "--inline", "-i", input],
        &["report", "--format", "report-sample", "-o", out, "--inline", "-i", input],
        &["annotate", "-i", input],
    ] {
        let (o, peak) = limited(&home, args);
        use std::os::unix::process::ExitStatusExt;
        assert!(
            o.status.signal().is_none() && o.status.success(),
            "{args:?}: {:?}: {}",
            o.status,
            stderr(&o)
        );
        assert!(peak < 256 << 10, "{args:?}: peak {peak} KiB");
        // report-sample names functions, not lines: it reads no DWARF.
        if !args.contains(&"report-sample") {
            assert!(stderr(&o).contains(note), "{args:?}: {}", stderr(&o));
        }
        if args[1] == "--sort" {
            text = stdout(&o);
        }
    }
    text
}

#[test]
fn a_zstd_section_inflating_past_its_size_is_left_out() {
    let (dir, exe, data) = recorded_spin("hostile_debug_zstd");
    // 2 GiB of zeros in 64 KiB, declaring 4 KiB: inflated past it, the section is refused.
    let file = debug_file(&exe, &[(".debug_info", 0x800, zstd_section(4096, &zstd_bomb(16_384)))]);
    install(&dir.join("home"), &exe, &file);
    let text = survives(&dir, &data, "the debug section .debug_info of");
    assert!(text.contains("spin"), "the symbol table still names it:\n{text}");
    // Declaring 32 GiB from 64 KiB is refused before anything is inflated.
    let file = debug_file(&exe, &[(".debug_info", 0x800, zstd_section(32 << 30, &zstd_bomb(16_384)))]);
    install(&dir.join("home"), &exe, &file);
    survives(&dir, &data, "over 128 times");
}

#[test]
fn a_zlib_section_declaring_terabytes_is_left_out() {
    let (dir, exe, data) = recorded_spin("hostile_debug_zlib");
    // A zlib stream of 8 MiB of zeros (about 8 KiB), declaring 1 TiB.
    let zeros = run(Command::new("python3")
        .args(["-c", "import sys, zlib; sys.stdout.buffer.write(zlib.compress(bytes(8 << 20), 9))"]));
    let mut section = Vec::new();
    section.extend_from_slice(&1u32.to_le_bytes());
    section.extend_from_slice(&0u32.to_le_bytes());
    section.extend_from_slice(&(1u64 << 40).to_le_bytes());
    section.extend_from_slice(&1u64.to_le_bytes());
    section.extend_from_slice(&zeros.stdout);
    install(&dir.join("home"), &exe, &debug_file(&exe, &[(".debug_info", 0x800, section)]));
    survives(&dir, &data, "over 128 times");
}

/// ULEB128 of `v`.
fn uleb(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

#[test]
fn entries_nested_twenty_thousand_deep_are_left_out() {
    let (dir, exe, data) = recorded_spin("hostile_debug_nested");
    let (at, size) = spin_range(&exe);
    // Abbreviations: 1 compile unit, 2 subprogram, 3 inlined subroutine; each with children,
    // a name, DW_AT_low_pc (addr) and DW_AT_high_pc (data8, a size).
    let mut abbrev = Vec::new();
    for (code, tag) in [(1u64, 0x11u64), (2, 0x2e), (3, 0x1d)] {
        uleb(code, &mut abbrev);
        uleb(tag, &mut abbrev);
        abbrev.push(1);
        for (name, form) in [(0x03u64, 0x08u64), (0x11, 0x01), (0x12, 0x07)] {
            uleb(name, &mut abbrev);
            uleb(form, &mut abbrev);
        }
        abbrev.extend_from_slice(&[0, 0]);
    }
    abbrev.push(0);
    let mut dies = Vec::new();
    let depth = 20_000;
    for (i, code) in
        std::iter::once(1u8).chain(std::iter::once(2)).chain(std::iter::repeat_n(3, depth)).enumerate()
    {
        dies.push(code);
        dies.extend_from_slice(if i == 1 { b"spin\0".as_slice() } else { b"n\0" });
        dies.extend_from_slice(&at.to_le_bytes());
        dies.extend_from_slice(&size.to_le_bytes());
    }
    dies.extend(std::iter::repeat_n(0u8, depth + 2));
    let mut info = Vec::new();
    info.extend_from_slice(&((dies.len() + 7) as u32).to_le_bytes());
    info.extend_from_slice(&4u16.to_le_bytes());
    info.extend_from_slice(&0u32.to_le_bytes());
    info.push(8);
    info.extend_from_slice(&dies);
    let file = debug_file(&exe, &[(".debug_abbrev", 0, abbrev), (".debug_info", 0, info)]);
    install(&dir.join("home"), &exe, &file);
    let text = survives(&dir, &data, "at .debug_info offset 0x0 of");
    assert!(text.contains("spin"), "the symbol table still names it:\n{text}");
}
