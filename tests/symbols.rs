//! Symbolization from DWARF: inline frames, source lines, and debug info found in separate
//! files (by build id and by .gnu_debuglink) for stripped binaries.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// Records `program 1` with frame-pointer call graphs.
fn record(name: &str, program: &Path) -> PathBuf {
    record_fp(name, program, &["1"])
}

/// `(percent, name)` rows of a one-key text report, inlined functions as entries of their own
/// (`--inline`) unless `--no-inline` is given.
fn rows(data: &Path, args: &[&str]) -> Vec<(f64, String)> {
    let split: &[&str] = if args.contains(&"--no-inline") { &[] } else { &["--inline"] };
    table(data, &[split, args].concat())
}

/// `(percent, name)` rows of a one-key text report with these options.
fn table(data: &Path, args: &[&str]) -> Vec<(f64, String)> {
    let o = run(rperf().arg("report").args(args).arg("-i").arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| {
            let (pct, rest) = l.split_once('%')?;
            Some((pct.trim().parse().ok()?, rest.trim().to_string()))
        })
        .collect()
}

fn share(rows: &[(f64, String)], name: &str) -> f64 {
    rows.iter().filter(|(_, n)| n == name).map(|(p, _)| p).sum()
}

/// The line of `source` marked `// HOT`.
fn hot_line(source: &str) -> u32 {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs").join(source))
            .unwrap();
    text.lines().position(|l| l.contains("// HOT")).unwrap() as u32 + 1
}

fn check_inline_frames(data: &Path, inner: &str) {
    let syms = rows(data, &["--sort", "symbol"]);
    let inlined = share(&syms, &format!("{inner} (inlined)"));
    assert!(inlined >= 20.0, "{inner} (inlined) has {inlined}%: {syms:?}");
    // The rest of the loop is outer_caller itself or other calls inlined into it.
    let in_loop: f64 =
        syms.iter().filter(|(_, n)| n == "outer_caller" || n.ends_with("(inlined)")).map(|(p, _)| p).sum();
    assert!(in_loop >= 80.0, "{syms:?}");
    // In stack outputs the inlined call is a frame of its own under its caller.
    let o = run(rperf().args(["report", "--format", "folded", "-i"]).arg(data));
    let folded = stdout(&o);
    let under: u64 = folded
        .lines()
        .filter(|l| {
            l.contains(&format!(";outer_caller;{inner} ")) || l.contains(&format!(";outer_caller;{inner};"))
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    let total: u64 = folded.lines().map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()).sum();
    assert!(under * 5 >= total, "{under} of {total} samples under outer_caller;{inner}:\n{folded}");
    // --no-inline folds them back into the containing function.
    let plain = rows(data, &["--sort", "symbol", "--no-inline"]);
    assert!(!plain.iter().any(|(_, n)| n.ends_with("(inlined)")), "{plain:?}");
    assert!(share(&plain, "outer_caller") >= 80.0, "{plain:?}");
    // Without --inline the table gives the self time to the function that contains the
    // address, as simpleperf and perf do; --children still counts the inlined call.
    let default = table(data, &["--sort", "symbol"]);
    assert!(!default.iter().any(|(_, n)| n.ends_with("(inlined)")), "{default:?}");
    assert!((share(&default, "outer_caller") - share(&plain, "outer_caller")).abs() < 0.02, "{default:?}");
    let children = stdout(&run(rperf().args(["report", "--children", "--sort", "symbol", "-i"]).arg(data)));
    assert!(children.contains(&format!("{inner} (inlined)")), "{children}");
}

#[test]
fn cpp_inlined_function_is_a_frame_under_its_caller() {
    let data = record("sym_inline_cpp", &programs().inline_cpp);
    check_inline_frames(&data, "inner_kernel");
}

#[test]
fn rust_inlined_function_is_a_frame_under_its_caller() {
    let data = record("sym_inline_rs", &programs().inline_rs);
    check_inline_frames(&data, "inline::inner_kernel");
}

#[test]
fn srcline_names_the_hot_line() {
    let data = record("sym_srcline", &programs().inline_cpp);
    let lines = rows(&data, &["--sort", "srcline"]);
    let hot = format!("inline.cpp:{}", hot_line("inline.cpp"));
    // gcc puts the loop's own instructions on the loop line, the inlined body's on HOT.
    assert!(share(&lines, &hot) >= 20.0, "{hot}: {lines:?}");
    let in_file: f64 = lines.iter().filter(|(_, l)| l.starts_with("inline.cpp:")).map(|(p, _)| p).sum();
    assert!(in_file >= 80.0, "{lines:?}");
    let rs = record("sym_srcline_rs", &programs().inline_rs);
    let lines = rows(&rs, &["--sort", "srcline"]);
    let hot = format!("inline.rs:{}", hot_line("inline.rs"));
    assert!(share(&lines, &hot) >= 40.0, "{hot}: {lines:?}");
}

fn tool(cmd: &mut Command) {
    let o = run(cmd);
    assert!(o.status.success(), "{cmd:?}: {}", stderr(&o));
}

#[test]
fn stripped_binaries_find_their_debug_files() {
    let dir = scratch("sym_stripped");
    let full = &programs().inline_cpp;
    let debug = dir.join("inline.debug");
    tool(Command::new("objcopy").arg("--only-keep-debug").arg(full).arg(&debug));

    // Through .gnu_debuglink: the debug file beside the binary.
    let linked = dir.join("inline_linked");
    tool(
        Command::new("objcopy")
            .arg("--strip-all")
            .arg("--add-gnu-debuglink")
            .arg(&debug)
            .arg(full)
            .arg(&linked),
    );
    assert!(!stdout(&run(Command::new("nm").arg(&linked))).contains("outer_caller"), "stripped");
    let data = record("sym_stripped_link", &linked);
    check_inline_frames(&data, "inner_kernel");

    // Through the build id, under /usr/lib/debug/.build-id (no debuglink).
    let bare = dir.join("inline_bare");
    tool(Command::new("objcopy").arg("--strip-all").arg(full).arg(&bare));
    let id = build_id_hex(&bare);
    let by_id = PathBuf::from(format!("/usr/lib/debug/.build-id/{}/{}.debug", &id[..2], &id[2..]));
    std::fs::create_dir_all(by_id.parent().unwrap()).expect("root can write /usr/lib/debug");
    std::fs::copy(&debug, &by_id).unwrap();
    let data = record("sym_stripped_id", &bare);
    let syms = rows(&data, &["--sort", "symbol"]);
    std::fs::remove_file(&by_id).ok();
    assert!(share(&syms, "inner_kernel (inlined)") >= 20.0, "{syms:?}");
    assert!(share(&syms, "outer_caller") >= 20.0, "{syms:?}");

    // A debug file of another build is not used.
    let other = dir.join("other.debug");
    tool(Command::new("objcopy").arg("--only-keep-debug").arg(&programs().workload).arg(&other));
    let wrong = dir.join("inline_wrong");
    std::fs::copy(&other, dir.join("inline.debug")).unwrap();
    tool(
        Command::new("objcopy")
            .arg("--strip-all")
            .arg("--add-gnu-debuglink")
            .arg(&other)
            .arg(full)
            .arg(&wrong),
    );
    let data = record("sym_stripped_wrong", &wrong);
    let syms = rows(&data, &["--sort", "symbol"]);
    assert!(share(&syms, "outer_caller") < 1.0 && share(&syms, "hot_loop") < 1.0, "{syms:?}");
}

/// Builds a MiniDebugInfo binary the way Fedora's find-debuginfo does: the function symbols
/// missing from .dynsym, xz-compressed into `.gnu_debugdata` of a fully stripped binary.
fn minidebuginfo_binary(dir: &Path, full: &Path) -> PathBuf {
    let names = |args: &[&str], kinds: &[&str]| -> std::collections::BTreeSet<String> {
        let o = run(Command::new("nm").args(args).args(["--format=posix", "--defined-only"]).arg(full));
        stdout(&o)
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (name, kind) = (f.next()?, f.next()?);
                (kinds.is_empty() || kinds.contains(&kind)).then(|| name.to_string())
            })
            .collect()
    };
    let dynamic = names(&["-D"], &[]);
    let keep: Vec<String> = names(&[], &["T", "t"]).difference(&dynamic).cloned().collect();
    assert!(keep.iter().any(|n| n == "outer_caller"), "{keep:?}");
    std::fs::write(dir.join("keep"), keep.join("\n") + "\n").unwrap();
    let mini = dir.join("mini");
    tool(
        Command::new("objcopy")
            .args(["-S", "--remove-section", ".comment", "--keep-symbols"])
            .arg(dir.join("keep"))
            .arg(full)
            .arg(&mini),
    );
    tool(Command::new("xz").arg("-f").arg(&mini));
    let prog = dir.join("inline_mini");
    tool(Command::new("strip").args(["--strip-all", "-R", ".comment", "-o"]).arg(&prog).arg(full));
    let mut section = std::ffi::OsString::from(".gnu_debugdata=");
    section.push(mini.with_extension("xz"));
    tool(Command::new("objcopy").arg("--add-section").arg(section).arg(&prog));
    prog
}

#[test]
fn minidebuginfo_names_functions_of_a_stripped_binary() {
    let dir = scratch("sym_minidebuginfo");
    let prog = minidebuginfo_binary(&dir, &programs().inline_cpp);
    assert!(!stdout(&run(Command::new("nm").arg(&prog))).contains("outer_caller"), "stripped");
    let data = record("sym_minidebuginfo_rec", &prog);
    let syms = rows(&data, &["--sort", "symbol"]);
    // MiniDebugInfo carries symbols, not DWARF: the inlined body counts as outer_caller.
    assert!(share(&syms, "outer_caller") >= 80.0, "{syms:?}");
    let o = run(rperf().args(["report", "--format", "folded", "-i"]).arg(&data));
    assert!(stdout(&o).lines().any(|l| l.contains(";main;outer_caller ")), "{}", stdout(&o));
}

#[test]
fn vdso_frames_are_named_from_the_recorded_image() {
    let data = record("sym_vdso", &programs().clock);
    let o = run(rperf().args(["report", "--sort", "dso,symbol", "-i"]).arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let vdso: f64 = text
        .lines()
        .filter(|l| l.contains("[vdso]") && l.contains("clock_gettime"))
        .filter_map(|l| l.split('%').next()?.trim().parse::<f64>().ok())
        .sum();
    assert!(vdso >= 30.0, "vDSO clock_gettime has {vdso}%:\n{text}");
    // The image is in the recording (rperf's section 195), not read from this machine.
    let o = run(rperf().args(["dump", "-i"]).arg(&data));
    assert!(stdout(&o).contains("rperf vDSO image (feature 195)"), "no vDSO section:\n{}", stdout(&o));
    // perf's recordings of the same program: the vDSO of this machine, checked by build id.
    let dir = scratch("sym_vdso_perf");
    let perf_data = dir.join("perf.data");
    let o = run(Command::new("perf")
        .args(["record", "-q", "-g", "-F", "2000", "-o"])
        .arg(&perf_data)
        .arg(&programs().clock)
        .arg("1"));
    assert!(o.status.success(), "{}", stderr(&o));
    let syms = rows(&perf_data, &["--sort", "symbol"]);
    assert!(
        syms.iter().any(|(p, n)| n.contains("clock_gettime") && *p >= 30.0 && n.starts_with("__vdso")),
        "{syms:?}"
    );
}

/// `(percent, dso, symbol)` rows of a `--sort dso,symbol` report.
fn dso_rows(data: &Path, extra: &[&str]) -> Vec<(f64, String, String)> {
    let o = run(rperf().args(["report", "--sort", "dso,symbol"]).args(extra).arg("-i").arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| {
            let (pct, rest) = l.split_once('%')?;
            let mut f = rest.split_whitespace();
            Some((pct.trim().parse().ok()?, f.next()?.to_string(), f.collect::<Vec<_>>().join(" ")))
        })
        .collect()
}

#[test]
fn kernel_module_frames_are_shown_under_their_module() {
    let data = record_syscalls("sym_modules", &["-F", "2000"]);
    let dir = data.parent().unwrap().to_path_buf();
    let plain = dso_rows(&data, &[]);
    let (pct, _, hot) = plain
        .iter()
        .find(|r| r.1 == "[kernel.kallsyms]" && r.2 != "[unknown]")
        .cloned()
        .unwrap_or_else(|| panic!("no kernel symbol: {plain:?}"));
    // The same kernel, with the hottest kernel function claimed by a module.
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let moved: String = kallsyms
        .lines()
        .map(|l| {
            if l.split_whitespace().nth(2) == Some(hot.as_str()) {
                format!("{l}\t[fakemod]\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let file = dir.join("kallsyms");
    std::fs::write(&file, moved).unwrap();
    let rows = dso_rows(&data, &["--kallsyms", file.to_str().unwrap()]);
    assert!(
        rows.iter().any(|r| r.1 == "[fakemod]" && r.2 == hot && (r.0 - pct).abs() < 0.01),
        "{hot} {pct}%: {rows:?}"
    );
    assert!(!rows.iter().any(|r| r.1 == "[kernel.kallsyms]" && r.2 == hot), "{rows:?}");
}

#[test]
fn symfs_holds_debug_files_in_build_id_layouts() {
    let dir = scratch("sym_symfs_debug");
    // A build id of its own: stripped_binaries_find_their_debug_files puts a debug file for
    // inline_cpp's build id under /usr/lib/debug while it runs, which this binary must not find.
    let mut note = Vec::new();
    for v in [4u32, 20, 3] {
        note.extend_from_slice(&v.to_le_bytes());
    }
    note.extend_from_slice(b"GNU\0");
    note.extend_from_slice(&[0x5a; 20]);
    let note_file = dir.join("build-id.note");
    std::fs::write(&note_file, note).unwrap();
    let full = &dir.join("inline_own");
    tool(
        Command::new("objcopy")
            .arg(format!("--update-section=.note.gnu.build-id={}", note_file.display()))
            .arg(&programs().inline_cpp)
            .arg(full),
    );
    assert_eq!(build_id_hex(full), "5a".repeat(20));
    let bare = dir.join("inline_bare");
    tool(Command::new("objcopy").arg("--strip-all").arg(full).arg(&bare));
    let data = record("sym_symfs_debug_rec", &bare);
    let none = rows(&data, &["--sort", "symbol"]);
    assert!(share(&none, "outer_caller") < 1.0, "stripped, no debug file yet: {none:?}");
    let id = build_id_hex(&bare);
    // simpleperf-style binary cache keyed by build id, and perf's build-id cache layout.
    for rel in [
        format!(".build-id/{}/{}.debug", &id[..2], &id[2..]),
        format!(".build-id/{}/{}/debug", &id[..2], &id[2..]),
    ] {
        let symfs = dir.join(format!("symfs{}", rel.len()));
        // Under --symfs nothing outside it is read: the binary is there too, at its path.
        let copy = symfs.join(bare.strip_prefix("/").unwrap());
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::copy(&bare, &copy).unwrap();
        let debug = symfs.join(&rel);
        std::fs::create_dir_all(debug.parent().unwrap()).unwrap();
        tool(Command::new("objcopy").arg("--only-keep-debug").arg(full).arg(&debug));
        let syms = rows(&data, &["--sort", "symbol", "--symfs", symfs.to_str().unwrap()]);
        assert!(share(&syms, "inner_kernel (inlined)") >= 20.0, "{rel}: {syms:?}");
        assert!(share(&syms, "outer_caller") >= 20.0, "{rel}: {syms:?}");
    }
}

#[test]
fn split_dwarf_is_read_from_dwo_files_and_dwp_packages() {
    let dir = scratch("sym_split_dwarf");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/inline.cpp");
    let prog = dir.join("split");
    // gcc writes the .dwo beside the output and records its folder as the unit's comp_dir.
    tool(
        Command::new("g++")
            .current_dir(&dir)
            .args(["-O2", "-g", "-gsplit-dwarf", "-fno-omit-frame-pointer"])
            .arg(&src)
            .arg("-o")
            .arg(&prog),
    );
    let dwo: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "dwo"))
        .collect();
    assert_eq!(dwo.len(), 1, "{dwo:?}");
    let data = record("sym_split_dwarf_rec", &prog);
    let srcline = format!("inline.cpp:{}", hot_line("inline.cpp"));
    let check = |what: &str| {
        let syms = rows(&data, &["--sort", "symbol"]);
        assert!(share(&syms, "inner_kernel (inlined)") >= 20.0, "{what}: {syms:?}");
        let lines = rows(&data, &["--sort", "srcline"]);
        assert!(share(&lines, &srcline) >= 20.0, "{what}: {lines:?}");
    };
    check(".dwo");
    // The same units packed into split.dwp, the .dwo gone.
    tool(Command::new("llvm-dwp").arg("-e").arg(&prog).arg("-o").arg(dir.join("split.dwp")));
    std::fs::remove_file(&dwo[0]).unwrap();
    check(".dwp");
    std::fs::remove_file(dir.join("split.dwp")).unwrap();
    let syms = rows(&data, &["--sort", "symbol"]);
    assert!(share(&syms, "inner_kernel (inlined)") < 1.0, "no split DWARF left: {syms:?}");
}

/// A C program of `n` small functions, called in turn through a table for as many rounds as
/// its argument says.
fn many_functions_source(n: usize) -> String {
    let mut c = String::from("#include <stdlib.h>\n");
    for i in 0..n {
        c += &format!(
            "__attribute__((noinline)) unsigned f{i}(unsigned x) {{ x = x * {m}u + {i}u; x ^= x >> 7; \
             x = x * 2654435761u + {i}u; x ^= x >> 13; x += {i}u * x; return x ^ (x >> 11); }}\n",
            m = 2 * i + 3
        );
    }
    let table: Vec<String> = (0..n).map(|i| format!("f{i}")).collect();
    c += &format!("static unsigned (*table[])(unsigned) = {{{}}};\n", table.join(","));
    c += "int main(int argc, char **argv) {\n  long rounds = argc > 1 ? atol(argv[1]) : 1;\n  \
          volatile unsigned sink; unsigned x = 1;\n  for (long r = 0; r < rounds; r++)\n    \
          for (unsigned i = 0; i < sizeof table / sizeof *table; i++) x = table[i](x);\n  \
          sink = x;\n  return sink == 42;\n}\n";
    c
}

#[test]
fn thousands_of_distinct_addresses_are_each_named_for_their_function() {
    // Addresses are named a batch at a time: samples on thousands of distinct addresses span
    // several batches, and each is named for the function the binary's symbol table (nm) puts
    // it in.
    let dir = scratch("sym_many_addresses");
    let src = dir.join("many.c");
    std::fs::write(&src, many_functions_source(2000)).unwrap();
    let prog = dir.join("many");
    tool(Command::new("gcc").args(["-O1", "-o"]).arg(&prog).arg(&src));
    let data = dir.join("perf.data");
    // A sample per 50 µs of the program's CPU time, however busy the machine.
    let o = run(rperf()
        .args(["record", "-e", "cpu-clock", "-c", "50000", "-o"])
        .arg(&data)
        .arg(&prog)
        .arg("80000"));
    assert!(o.status.success(), "{}", stderr(&o));
    let nm = stdout(&run(Command::new("nm").args(["-S", "--defined-only"]).arg(&prog)));
    let mut functions: Vec<(u64, u64, String)> = nm
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [start, size, "T" | "t", name] => {
                Some((u64::from_str_radix(start, 16).ok()?, u64::from_str_radix(size, 16).ok()?, name.into()))
            }
            _ => None,
        })
        .collect();
    functions.sort();
    let function_at = |a: u64| {
        let i = functions.partition_point(|f| f.0 <= a).checked_sub(1)?;
        let (start, size, name) = &functions[i];
        (a < start + size).then_some(name.as_str())
    };
    let script = stdout(&run(rperf().args(["report", "--format", "script", "-i"]).arg(&data)));
    let suffix = format!(" ({})", prog.display());
    let mut distinct = std::collections::HashSet::new();
    for frame in script.lines().filter_map(|l| l.strip_prefix('\t')?.strip_suffix(&suffix)) {
        let (addr, name) = frame.trim().split_once(' ').unwrap_or_else(|| panic!("{frame:?}"));
        let addr = u64::from_str_radix(addr, 16).unwrap_or_else(|_| panic!("{frame:?}"));
        assert_eq!(Some(name), function_at(addr), "the name of {addr:#x}");
        distinct.insert(addr);
    }
    assert!(distinct.len() > 2 * 4096, "{} distinct addresses in the program", distinct.len());
}
