//! rperf's cache folder: the running kernel's symbols and inflated debug sections are kept
//! there, read back by later reports, and used only when they are this user's own files.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// The report of `data` sorted by `sort`, with rperf's cache in `cache`.
fn report(data: &Path, cache: &Path, sort: &str) -> String {
    // Inlined functions as entries of their own: the tests look for their names. A home
    // without perf's build-id cache, whose copy of the kernel's symbols would be read instead
    // of kept ones.
    let o = run(rperf()
        .env("RPERF_CACHE_DIR", cache)
        .env("HOME", cache.with_file_name("home-without-perf"))
        .args(["report", "--inline", "--sort", sort, "-i"])
        .arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

/// Files of `dir` whose names start with `prefix`.
fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    v.sort();
    v
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

/// Replaces `from` by `to` (the same length) everywhere in the file at `path`.
fn plant(path: &Path, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let bytes = std::fs::read(path).unwrap();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(from.as_bytes()) {
            out.extend_from_slice(to.as_bytes());
            i += from.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    assert_ne!(out, bytes, "{from} is not in {}", path.display());
    std::fs::write(path, out).unwrap();
}

fn chown_nobody(path: &Path) {
    let st = Command::new("chown").arg("65534:65534").arg(path).status().unwrap();
    assert!(st.success());
}

/// perf's recording (in `dir`) of dd copying `count` blocks of 16 bytes: time mostly in the
/// kernel.
fn perf_record_dd(dir: &Path, count: &str) -> PathBuf {
    let data = dir.join("perf.data");
    let o = run(Command::new("perf").arg("record").arg("-o").arg(&data).args([
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=16",
        &format!("count={count}"),
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    data
}

/// The name of the first named kernel symbol of a `dso,symbol` report.
fn top_kernel_symbol(report: &str) -> String {
    report
        .lines()
        .find(|l| l.contains("[kernel.kallsyms]") && !l.contains("[kernel.kallsyms][+"))
        .and_then(|l| l.split_whitespace().last())
        .unwrap_or_else(|| panic!("no named kernel symbol:\n{report}"))
        .to_string()
}

#[test]
fn kernel_symbols_are_kept_for_the_boot_and_read_back() {
    let dir = scratch("cache_kallsyms");
    // perf's recordings carry no kernel symbols: reports name kernel code from this kernel's.
    let data = perf_record_dd(&dir, "300000");
    let cache = dir.join("cache");
    let first = report(&data, &cache, "dso,symbol");
    let name = top_kernel_symbol(&first);
    let kept = files(&cache, "kallsyms-");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!((mode(&cache), mode(&kept[0])), (0o700, 0o600));
    // Read back: the same report.
    assert_eq!(report(&data, &cache, "dso,symbol"), first);
    // The kept file is what names kernel code now.
    let planted: String = "q".repeat(name.len());
    plant(&kept[0], &format!(" {name}\n"), &format!(" {planted}\n"));
    let with_planted = report(&data, &cache, "dso,symbol");
    assert!(with_planted.contains(&planted), "{with_planted}");
    // Another user's file is not used (and is replaced).
    chown_nobody(&kept[0]);
    assert_eq!(report(&data, &cache, "dso,symbol"), first);
    assert_eq!(std::fs::metadata(&kept[0]).unwrap().uid(), 0);
    // Nor a link to one of this user's files.
    let elsewhere = dir.join("elsewhere");
    std::fs::copy(&kept[0], &elsewhere).unwrap();
    plant(&elsewhere, &format!(" {name}\n"), &format!(" {planted}\n"));
    std::fs::remove_file(&kept[0]).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &kept[0]).unwrap();
    assert_eq!(report(&data, &cache, "dso,symbol"), first);
    // A cache folder others can write to is not used at all.
    let open = dir.join("open-cache");
    std::fs::create_dir_all(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(report(&data, &open, "dso,symbol"), first);
    assert!(files(&open, "").is_empty());
}

#[test]
fn recordings_store_kernel_symbols_from_the_kept_ones() {
    let dir = scratch("cache_record_kallsyms");
    let cache = dir.join("cache");
    // A first report of a recording without kernel symbols keeps the running kernel's.
    report(&perf_record_dd(&dir, "1000"), &cache, "dso,symbol");
    let kept = files(&cache, "kallsyms-");
    assert_eq!(kept.len(), 1, "{kept:?}");
    let record = |name: &str| {
        let data = dir.join(name);
        let o = run(rperf()
            .env("RPERF_CACHE_DIR", &cache)
            .env("HOME", dir.join("home-without-perf"))
            .args(["record", "-o"])
            .arg(&data)
            .args(["--", "dd", "if=/dev/zero", "of=/dev/null", "bs=16", "count=300000"]));
        assert!(o.status.success(), "{}", stderr(&o));
        // Read with a cache of its own: kernel code is named from the recording's symbols.
        report(&data, &dir.join(format!("{name}-cache")), "dso,symbol")
    };
    let before = record("before.data");
    let name = top_kernel_symbol(&before);
    // The recorder took the kept symbols, not /proc/kallsyms: a name planted there is the one
    // the next recording stores.
    let planted: String = "q".repeat(name.len());
    plant(&kept[0], &format!(" {name}\n"), &format!(" {planted}\n"));
    let after = record("after.data");
    assert!(after.contains(&planted) && !after.contains(&format!(" {name}\n")), "{after}");
    // With the kept file gone, /proc/kallsyms names it again.
    std::fs::remove_file(&kept[0]).unwrap();
    let again = record("again.data");
    assert_eq!(top_kernel_symbol(&again), name, "{again}");
}

/// The report of `data` sorted by dso and symbol, with rperf's cache in `cache` and `home` as
/// the home folder (where perf keeps its build-id cache).
fn report_at_home(data: &Path, cache: &Path, home: &Path) -> String {
    let o = run(rperf()
        .env("RPERF_CACHE_DIR", cache)
        .env("HOME", home)
        .args(["report", "--sort", "dso,symbol", "-i"])
        .arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

#[test]
fn perfs_copy_of_the_kernel_symbols_serves_a_first_report() {
    // `perf record` keeps a copy of /proc/kallsyms in its build-id cache; reports search the
    // core's symbols in it instead of having the kernel format them all, and keep nothing.
    let dir = scratch("cache_perf_copy");
    let data = perf_record_dd(&dir, "300000");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let fresh = |n: &str| dir.join(format!("cache-{n}"));
    let first = report_at_home(&data, &fresh("none"), &home);
    let name = top_kernel_symbol(&first);
    let id = stdout(&run(Command::new("perf").args(["buildid-list", "-k"]))).trim().to_string();
    let copy = home.join(".debug/[kernel.kallsyms]").join(&id).join("kallsyms");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    std::fs::write(&copy, &kallsyms).unwrap();
    let planted: String = "q".repeat(name.len());
    plant(&copy, &format!(" {name}\n"), &format!(" {planted}\n"));
    // The copy names the kernel's code, in every report.
    let from_copy = report_at_home(&data, &fresh("copy"), &home);
    assert_eq!(from_copy, first.replace(&format!(" {name}\n"), &format!(" {planted}\n")));
    assert!(files(&fresh("copy"), "kallsyms-").is_empty());
    assert_eq!(report_at_home(&data, &fresh("copy"), &home), from_copy);
    assert_eq!(files(&fresh("none"), "kallsyms-").len(), 1, "kept from /proc/kallsyms without the copy");
    // Not a copy whose `_text` is not where the running kernel's is (another boot's, under
    // KASLR), nor another user's.
    let text_line = kallsyms.lines().find(|l| l.ends_with(" _text")).expect("_text in /proc/kallsyms");
    let (addr, rest) = text_line.split_once(' ').unwrap();
    let moved = format!("{:016x}", u64::from_str_radix(addr, 16).unwrap() + 0x20_0000);
    plant(&copy, &format!("{text_line}\n"), &format!("{moved} {rest}\n"));
    assert_eq!(report_at_home(&data, &fresh("moved"), &home), first);
    plant(&copy, &format!("{moved} {rest}\n"), &format!("{text_line}\n"));
    chown_nobody(&copy);
    assert_eq!(report_at_home(&data, &fresh("other"), &home), first);
}

/// A cache folder whose path another user can change (a folder above it writable by others,
/// without the sticky bit) is not used: swapping it between the check and a write would make
/// root write where that user chose. The report says so once and runs without it.
#[test]
fn a_cache_folder_under_a_folder_others_can_write_is_not_used() {
    let dir = scratch("cache_open_parent");
    // perf's recording: its kernel frames are named from this kernel's symbols, kept in the
    // cache folder when there is one.
    let data = perf_record_dd(&dir, "100000");
    let shared = dir.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let cache = shared.join("cache");
    std::fs::create_dir(&cache).unwrap();
    // Without perf's copy of the kernel's symbols, they are kept in the cache folder.
    let home = dir.join("home");
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
    let o = run(rperf()
        .env("RPERF_CACHE_DIR", &cache)
        .env("HOME", &home)
        .args(["report", "--sort", "dso,symbol", "-i"])
        .arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.matches("is not used").count(), 1, "{err}");
    assert!(err.contains("writable by other users") && err.contains("RPERF_CACHE_DIR"), "{err}");
    assert!(files(&cache, "").is_empty(), "{:?}", files(&cache, ""));
    // With the sticky bit (as /tmp has), this user's folder there is used.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let o = run(rperf()
        .env("RPERF_CACHE_DIR", &cache)
        .env("HOME", &home)
        .args(["report", "--sort", "dso,symbol", "-i"])
        .arg(&data));
    assert!(!stderr(&o).contains("is not used"), "{}", stderr(&o));
    assert!(!files(&cache, "kallsyms-").is_empty());
}

/// A cache folder named through a link another user owns in a sticky folder (as `/tmp` is)
/// is not used: that user can point the link at any folder of root's at any time.
#[test]
fn a_cache_folder_through_another_users_link_is_not_used() {
    let dir = scratch("cache_their_link");
    let data = perf_record_dd(&dir, "100000");
    let sticky = dir.join("tmp");
    std::fs::create_dir_all(&sticky).unwrap();
    std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let target = dir.join("roots-folder");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o700)).unwrap();
    let link = sticky.join("cache");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let st = Command::new("chown").args(["-h", "65534:65534"]).arg(&link).status().unwrap();
    assert!(st.success());
    for cache in [link.clone(), link.join("rperf")] {
        let o = run(rperf()
            .env("RPERF_CACHE_DIR", &cache)
            .env("HOME", dir.join("home"))
            .args(["report", "--sort", "dso,symbol", "-i"])
            .arg(&data));
        assert!(o.status.success(), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("is not used") && err.contains("belongs to another user (uid 65534)"), "{err}");
        assert!(files(&target, "").is_empty(), "root wrote where the link leads: {:?}", files(&target, ""));
    }
}

/// tests/programs/inline.cpp built as `exe`, its debug sections compressed as `gz` says.
fn build_inline(exe: &Path, gz: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/inline.cpp");
    let st = Command::new("g++")
        .args(["-O2", "-g", gz, "-fno-omit-frame-pointer", "-o"])
        .arg(exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    exe.to_path_buf()
}

#[test]
fn inflated_debug_sections_are_kept_by_build_id() {
    let dir = scratch("cache_debug");
    // inline.cpp with its debug sections compressed, as distributions ship debug files.
    let exe = build_inline(&dir.join("inline_gz"), "-gz=zlib");
    let data = record_fp("cache_debug_rec", &exe, &["1"]);
    let cache = dir.join("cache");
    let first = report(&data, &cache, "symbol");
    assert!(first.contains("inner_kernel (inlined)"), "{first}");
    let id = build_id_hex(&exe);
    let kept = files(&cache.join("debug"), &id);
    let named = |section: &str| {
        kept.iter()
            .find(|p| p.to_string_lossy().ends_with(section))
            .unwrap_or_else(|| panic!("{section}: {kept:?}"))
            .clone()
    };
    let (info, strings) = (named(".debug_info"), named(".debug_str"));
    assert!(kept.iter().all(|p| mode(p) == 0o600));
    // Without the source frames kept too (`source_frames_are_kept_by_debug_file`), a report
    // reads the DWARF again.
    let from_dwarf = |data: &Path| {
        std::fs::remove_dir_all(cache.join("frames")).unwrap();
        report(data, &cache, "symbol")
    };
    assert_eq!(from_dwarf(&data), first);
    // The kept sections are what names code now.
    plant(&strings, "inner_kernel", "planted_func");
    let with_planted = from_dwarf(&data);
    assert!(with_planted.contains("planted_func (inlined)"), "{with_planted}");
    // Another file with the same build id (a copy) keeps its own.
    let copy = dir.join("inline_gz_copy");
    copy_executable(&exe, &copy);
    let copy_data = record_fp("cache_debug_copy", &copy, &["1"]);
    let from_copy = from_dwarf(&copy_data);
    assert!(from_copy.contains("inner_kernel (inlined)") && !from_copy.contains("planted"), "{from_copy}");
    // Another user's file is not used, nor one of another length.
    chown_nobody(&strings);
    assert_eq!(from_dwarf(&data), first);
    let mut bytes = std::fs::read(&info).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&info, bytes).unwrap();
    assert_eq!(from_dwarf(&data), first);
}

/// A first report inflates the compressed debug sections of the binaries it names while it
/// still reads samples, binaries it unwinds through included: each section is kept whole, the
/// report names what a report without a cache folder names, and nothing is inflated for a
/// debug file whose frames are kept.
#[test]
fn debug_sections_inflated_beside_the_samples_are_kept_whole() {
    let dir = scratch("cache_ahead");
    let exe = build_inline(&dir.join("inline_gz"), "-gz=zlib");
    // perf's DWARF recording: the report unwinds it, loading the binary before naming starts.
    let data = dir.join("perf.data");
    let st = Command::new("perf")
        .args(["record", "-q", "--call-graph", "dwarf", "-F", "1000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&exe)
        .arg("0.5")
        .status()
        .unwrap();
    assert!(st.success());
    let report_g = |cache: &Path| {
        let o = run(rperf()
            .env("RPERF_CACHE_DIR", cache)
            .env("HOME", cache.with_file_name("home-without-perf"))
            .args(["report", "-g", "--inline", "--sort", "symbol,srcline", "-i"])
            .arg(&data));
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let cache = dir.join("cache");
    let first = report_g(&cache);
    assert!(first.contains("inner_kernel (inlined)") && first.contains("inline.cpp:"), "{first}");
    // A cache folder that is not a folder: nothing kept, the sections inflated in memory.
    let no_cache = dir.join("not-a-folder");
    std::fs::write(&no_cache, "").unwrap();
    assert_eq!(report_g(&no_cache), first);
    // Each section kept is the whole section, as objcopy inflates it.
    let plain = dir.join("plain");
    let st =
        Command::new("objcopy").arg("--decompress-debug-sections").arg(&exe).arg(&plain).status().unwrap();
    assert!(st.success());
    let kept = files(&cache.join("debug"), &build_id_hex(&exe));
    let names: Vec<String> =
        kept.iter().map(|p| p.to_string_lossy().rsplit('.').next().unwrap().to_string()).collect();
    for wanted in ["debug_info", "debug_abbrev", "debug_line", "debug_str"] {
        assert!(names.iter().any(|n| n == wanted), "{wanted}: {kept:?}");
    }
    for (path, name) in kept.iter().zip(&names) {
        let out = dir.join(format!("{name}.objcopy"));
        let st = Command::new("objcopy")
            .arg(format!("--dump-section=.{name}={}", out.display()))
            .arg(&plain)
            .arg(dir.join("discard"))
            .status()
            .unwrap();
        assert!(st.success());
        assert!(std::fs::read(path).unwrap() == std::fs::read(&out).unwrap(), "{name} differs");
    }
    // The frames are kept now: a report reads no DWARF, and inflates nothing.
    std::fs::remove_dir_all(cache.join("debug")).unwrap();
    assert_eq!(report_g(&cache), first);
    assert!(files(&cache.join("debug"), &build_id_hex(&exe)).is_empty());
}

/// What the DWARF says of the addresses a report named is kept by debug file, and read back
/// by the next report instead of loading the DWARF.
#[test]
fn source_frames_are_kept_by_debug_file() {
    let dir = scratch("cache_frames");
    let exe = build_inline(&dir.join("inline"), "-gz=none");
    let data = record_fp("cache_frames_rec", &exe, &["1"]);
    let cache = dir.join("cache");
    let first = report(&data, &cache, "symbol,srcline");
    assert!(first.contains("inner_kernel (inlined)"), "{first}");
    let kept = files(&cache.join("frames"), &build_id_hex(&exe));
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(mode(&kept[0]), 0o600);
    assert_eq!(report(&data, &cache, "symbol,srcline"), first);
    // The kept frames are what names code now.
    plant(&kept[0], "inner_kernel", "planted_func");
    let with_planted = report(&data, &cache, "symbol,srcline");
    assert!(with_planted.contains("planted_func (inlined)"), "{with_planted}");
    // The binary changed (its time): its DWARF is read again, and kept apart.
    let stamp = dir.join("stamp");
    std::fs::write(&stamp, "").unwrap();
    let st = Command::new("touch").arg("-r").arg(&exe).arg(&stamp).status().unwrap();
    assert!(st.success());
    let st = Command::new("touch").arg("-d").arg("2001-01-01").arg(&exe).status().unwrap();
    assert!(st.success());
    assert_eq!(report(&data, &cache, "symbol,srcline"), first);
    assert_eq!(files(&cache.join("frames"), &build_id_hex(&exe)).len(), 2);
    // Back as it was, the planted file is its own again; another user's file is not read.
    let st = Command::new("touch").arg("-r").arg(&stamp).arg(&exe).status().unwrap();
    assert!(st.success());
    assert!(report(&data, &cache, "symbol,srcline").contains("planted_func"));
    for f in files(&cache.join("frames"), &build_id_hex(&exe)) {
        chown_nobody(&f);
    }
    let o = run(rperf()
        .env("RPERF_CACHE_DIR", &cache)
        .args(["report", "--sort", "symbol,srcline", "-i"])
        .arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("planted"), "{}", stdout(&o));
}

/// Where more than two cores are free, samples are decoded and unwound side by side: the
/// report is the same as one thread's.
#[test]
fn side_by_side_unwinding_reports_what_one_thread_does() {
    let data = scratch("cache_threads").join("perf.data");
    let o = run(rperf()
        .args(["record", "-g", "dwarf", "-F", "2000", "--no-post-unwind", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&programs().mixed)
        .args(["0.5", "2"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let with = |threads: &str| {
        let o = run(rperf()
            .env("RAYON_NUM_THREADS", threads)
            .args(["report", "--format", "folded", "-i"])
            .arg(&data));
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let one = with("1");
    assert!(one.lines().filter(|l| l.contains("main")).count() > 10, "{one}");
    assert_eq!(with("4"), one);
}
