//! JIT code named through the runtimes' symbol maps (`/tmp/perf-PID.map`): Node with
//! --perf-basic-prof and Java with DumpPerfMapAtExit, also after the map files are deleted
//! (rperf record keeps them in the recording), and perf's recordings with the map on disk.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn program(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs").join(name)
}

/// `(percent, dso, symbol)` rows of `rperf report --sort dso,symbol --csv`.
fn rows(data: &Path) -> Vec<(f64, String, String)> {
    let o = run(rperf().args(["report", "--sort", "dso,symbol", "--csv", "-i"]).arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    csv_rows(&stdout(&o), ',')
        .into_iter()
        .map(|r| (pct(&r["Overhead"]), r["Shared Object"].clone(), r["Symbol"].clone()))
        .collect()
}

/// Share of samples in JIT code whose name contains `name`, and the map files they came from.
fn jit_share(data: &Path, name: &str) -> (f64, Vec<String>) {
    let rows = rows(data);
    let share = rows.iter().filter(|(_, _, s)| s.contains(name)).map(|(p, _, _)| p).sum();
    let mut maps: Vec<String> =
        rows.iter().filter(|(_, d, _)| d.starts_with("/tmp/perf-")).map(|(_, d, _)| d.clone()).collect();
    maps.sort();
    maps.dedup();
    (share, maps)
}

fn named_before_and_after_deleting_the_map(data: &Path, name: &str) {
    let (before, maps) = jit_share(data, name);
    assert!(before >= 50.0, "{name}: {before}% — {:?}", rows(data));
    for m in &maps {
        std::fs::remove_file(m).ok();
    }
    let (after, _) = jit_share(data, name);
    assert_eq!(before, after, "{name} after deleting {maps:?}");
}

#[test]
fn node_perf_basic_prof() {
    let dir = scratch("jit_node");
    let data = dir.join("node.data");
    let o = run(rperf()
        .args(["record", "-g", "fp", "-o"])
        .arg(&data)
        .args(["--", "node", "--perf-basic-prof"])
        .arg(program("hot.js"))
        .current_dir(&dir));
    assert!(o.status.success(), "{}", stderr(&o));
    named_before_and_after_deleting_the_map(&data, "hotJsFunction");
}

#[test]
fn java_dump_perf_map_at_exit() {
    let dir = scratch("jit_java");
    let st = Command::new("javac").arg("-d").arg(&dir).arg(program("Hot.java")).status().expect("javac runs");
    assert!(st.success());
    let data = dir.join("java.data");
    let o = run(rperf()
        .args(["record", "-g", "fp", "-o"])
        .arg(&data)
        .args(["--", "java", "-XX:+UnlockDiagnosticVMOptions", "-XX:+DumpPerfMapAtExit", "-cp"])
        .arg(&dir)
        .arg("Hot"));
    assert!(o.status.success(), "{}", stderr(&o));
    named_before_and_after_deleting_the_map(&data, "Hot.hotJavaMethod");
}

/// `perf record -g` of Node running hot.js with its perf map, in a scratch directory `name`.
fn perf_record_node(name: &str) -> PathBuf {
    let dir = scratch(name);
    let data = dir.join("perf.data");
    let o = run(Command::new("perf")
        .args(["record", "-q", "-g", "-o"])
        .arg(&data)
        .args(["--", "node", "--perf-basic-prof"])
        .arg(program("hot.js"))
        .current_dir(&dir));
    assert!(o.status.success(), "{}", stderr(&o));
    data
}

#[test]
fn perf_recordings_use_the_map_on_disk() {
    let data = perf_record_node("jit_perf");
    let (share, maps) = jit_share(&data, "hotJsFunction");
    for m in &maps {
        std::fs::remove_file(m).ok();
    }
    assert!(share >= 50.0, "{share}% — {:?}", rows(&data));
}

/// perf's recordings name JIT code from `/tmp/perf-PID.map` only when it is a regular file of
/// this user or root (as perf reads it), unless `--force`: another user's map must not put
/// names in the report, a FIFO must not hang it, a link to /dev/zero must not fill memory.
#[test]
fn maps_on_disk_are_read_only_when_safe() {
    let data = perf_record_node("jit_perf_unsafe");
    let (share, maps) = jit_share(&data, "hotJsFunction");
    assert!(share >= 50.0 && maps.len() == 1, "{share}% {maps:?}");
    let map = PathBuf::from(&maps[0]);
    let saved = std::fs::read(&map).unwrap();
    let report = |extra: &[&str]| {
        let o = run(Command::new("timeout")
            .arg("30")
            .arg(env!("CARGO_BIN_EXE_rperf"))
            .args(["report", "--sort", "symbol", "-i"])
            .arg(&data)
            .args(extra));
        assert!(o.status.success(), "{}", stderr(&o));
        (stdout(&o).contains("hotJsFunction"), stderr(&o))
    };
    // Another user's map.
    let st = Command::new("chown").arg("65534").arg(&map).status().unwrap();
    assert!(st.success(), "the test runs as root, as CI does");
    let (named, warn) = report(&[]);
    assert!(!named && warn.contains("belongs to uid 65534") && warn.contains("--force"), "{warn}");
    assert!(report(&["--force"]).0, "--force reads it");
    // A FIFO and a link to /dev/zero.
    std::fs::remove_file(&map).unwrap();
    let c = std::ffi::CString::new(map.to_str().unwrap()).unwrap();
    // SAFETY: c is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let (named, warn) = report(&[]);
    assert!(!named && warn.contains("FIFO"), "{warn}");
    std::fs::remove_file(&map).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &map).unwrap();
    let (named, warn) = report(&[]);
    assert!(!named && warn.contains("symbolic link"), "{warn}");
    let (_, warn) = report(&["--force"]);
    assert!(warn.contains("not a regular file"), "{warn}");
    std::fs::remove_file(&map).unwrap();
    std::fs::write(&map, saved).unwrap();
    assert!(report(&[]).0);
    std::fs::remove_file(&map).ok();
}

#[test]
fn node_perf_prof_jitdump_without_an_inject_step() {
    let dir = scratch("jit_dump");
    let data = dir.join("node.data");
    // V8 writes jit-PID.dump into its working directory and announces it with an mmap.
    let o = run(rperf()
        .args(["record", "-g", "fp", "-o"])
        .arg(&data)
        .args(["--", "node", "--perf-prof"])
        .arg(program("hot.js"))
        .current_dir(&dir));
    assert!(o.status.success(), "{}", stderr(&o));
    let dumps: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("jit-"))
        .collect();
    assert_eq!(dumps.len(), 1, "node wrote one jitdump: {dumps:?}");
    let share = |data: &Path| -> f64 {
        rows(data)
            .iter()
            .filter(|(_, d, s)| d.contains("jit-") && s.contains("hotJsFunction"))
            .map(|(p, _, _)| p)
            .sum()
    };
    let before = share(&data);
    assert!(before >= 50.0, "{before}% — {:?}", rows(&data));
    std::fs::remove_file(&dumps[0]).unwrap();
    assert_eq!(share(&data), before, "the recording keeps the jitdump");
}

/// The symbol maps `rperf record` copies into the recording are bounded and checked: any user
/// can leave any file at `/tmp/perf-PID.map` for a process of theirs, and root's `record -a`
/// would copy it. A map larger than `--jit-max-map`, past `--jit-max-total`, or not map text
/// is left out and said; a real map is kept.
#[test]
fn recorded_maps_are_bounded_and_must_be_maps() {
    let dir = scratch("jit_map_bounds");
    let script = dir.join("leaves-a-map.sh");
    write_executable(
        &script,
        "#!/bin/sh\necho $$\ncase \"$1\" in\n\
         good) i=0; while [ $i -lt 100 ]; do echo \"$((4096 + i * 16)) 10 rperf_kept_marker_$i\"; i=$((i+1)); done > /tmp/perf-$$.map ;;\n\
         sparse) truncate -s 1G /tmp/perf-$$.map ;;\n\
         zeros) truncate -s 1M /tmp/perf-$$.map ;;\n\
         esac\ni=0; while [ $i -lt 200000 ]; do i=$((i+1)); done\n",
    );
    let record = |extra: &[&str]| {
        let data = dir.join("perf.data");
        let both = format!("{0} good & {0} sparse & {0} zeros & wait", script.display());
        let o = run(rperf().args(["record", "-o"]).arg(&data).args(extra).args(["--", "sh", "-c", &both]));
        for pid in stdout(&o).lines() {
            std::fs::remove_file(format!("/tmp/perf-{}.map", pid.trim())).ok();
        }
        assert!(o.status.success(), "{}", stderr(&o));
        (std::fs::read(&data).unwrap(), stderr(&o))
    };
    let (bytes, err) = record(&[]);
    let holds = |b: &[u8], s: &str| b.windows(s.len()).any(|w| w == s.as_bytes());
    assert!(holds(&bytes, "rperf_kept_marker_99\n"), "the real map is kept: {err}");
    assert!(bytes.len() < 8 << 20, "{} bytes: a map left out was copied", bytes.len());
    assert!(
        err.contains(
            "1 JIT symbol maps or jitdumps (1.0 GiB) were not kept: 1 larger than 64.0 MiB (--jit-max-map)"
        ),
        "{err}"
    );
    assert!(err.contains(".map is not a JIT symbol map (line 1 is not `START SIZE NAME`)"), "{err}");
    // Past the total, the real map is left out too.
    let (bytes, err) = record(&["--jit-max-total", "1K"]);
    assert!(!holds(&bytes, "rperf_kept_marker_"), "{err}");
    assert!(err.contains("past 1.0 KiB of JIT files in all (--jit-max-total)"), "{err}");
}
