//! The device builds (scripts/build-device.sh): static binaries for arm64 and x86_64 that report
//! exactly what the host build reports. The arm64 one runs under qemu user-mode emulation.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn device_binary(abi: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/device").join(abi).join("rperf");
    assert!(p.is_file(), "{} is missing: run ./scripts/build-device.sh (the test command does)", p.display());
    p
}

/// Statically linked: no program interpreter and no shared libraries needed.
fn assert_static(binary: &Path) {
    let o = run(Command::new("readelf").args(["-l", "-d", "-W"]).arg(binary));
    let text = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!text.contains("INTERP"), "{} asks for a program interpreter:\n{text}", binary.display());
    assert!(!text.contains("(NEEDED)"), "{} needs shared libraries:\n{text}", binary.display());
}

/// stdout of `rperf report` of a shared recording, run by `runner` (the binary itself, or qemu).
fn report_with(runner: &[&Path], file: &str, args: &[&str]) -> String {
    let dir = simpleperf_testdata();
    let mut cmd = Command::new(runner[0]);
    cmd.args(&runner[1..]).arg("report").arg("-i").arg(dir.join(file)).arg("--symfs").arg(&dir).args(args);
    let o = run(&mut cmd);
    assert!(o.status.success(), "{runner:?} report {file}: {}", stderr(&o));
    stdout(&o)
}

const CASES: &[(&str, &[&str])] = &[
    ("perf_display_bitmaps.data", &[]),
    ("perf_with_jit_symbol.data", &["-g", "--sort", "dso,symbol"]),
    // Raw stacks unwound with DWARF on the reporting side.
    ("perf_no_unwind.data", &["--format", "folded"]),
    ("perf_with_callchain_record.data", &["--sort", "symbol", "--children"]),
    ("perf_with_trace_offcpu_v2.data", &["--sort", "comm,symbol"]),
];

#[test]
fn device_binaries_are_static() {
    assert_static(&device_binary("arm64"));
    assert_static(&device_binary("x86_64"));
}

#[test]
fn arm64_build_under_qemu_reports_what_the_host_reports() {
    let qemu = Path::new("/usr/bin/qemu-aarch64-static");
    assert!(
        qemu.is_file(),
        "qemu-aarch64-static is missing: apt-get install qemu-user-static (the test command does)"
    );
    let arm64 = device_binary("arm64");
    let host = PathBuf::from(env!("CARGO_BIN_EXE_rperf"));
    for (file, args) in CASES {
        let want = report_with(&[&host], file, args);
        let got = report_with(&[qemu, &arm64], file, args);
        assert!(want.lines().count() > 5, "{file}: {want}");
        assert_eq!(got, want, "{file} {args:?}: the arm64 build differs from the host's");
    }
}

#[test]
fn x86_64_build_reports_what_the_host_reports() {
    let x86 = device_binary("x86_64");
    let host = PathBuf::from(env!("CARGO_BIN_EXE_rperf"));
    for (file, args) in CASES {
        assert_eq!(report_with(&[&x86], file, args), report_with(&[&host], file, args), "{file} {args:?}");
    }
}
