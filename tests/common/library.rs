//! The report library under test and simpleperf's scripts set up to load it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::*;

/// The library `cargo build` made beside the rperf binary under test.
pub fn library() -> PathBuf {
    let lib = Path::new(env!("CARGO_BIN_EXE_rperf")).with_file_name("librperf_report.so");
    assert!(
        lib.is_file(),
        "{} is missing: build it with `cargo build -p rperf-reportlib` (scripts/test.sh does)",
        lib.display()
    );
    lib
}

/// A copy of simpleperf's scripts with rperf's library as `libsimpleperf_report.so`, as a user
/// sets it up: those of the shared simpleperf's version.
pub fn scripts() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| set_up_scripts("scripts", "report_library_scripts"))
}

/// The same with simpleperf's newest scripts (`scripts-newest`), which bind more of the
/// library.
pub fn scripts_newest() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| set_up_scripts("scripts-newest", "report_library_scripts_newest"))
}

fn set_up_scripts(generation: &str, scratch_name: &str) -> PathBuf {
    let from = simpleperf().parent().unwrap().join("..").join(generation);
    assert!(from.is_dir(), "simpleperf's scripts not found at {}", from.display());
    let dir = scratch(scratch_name).join("scripts");
    let o = run(Command::new("cp").arg("-r").arg(&from).arg(&dir));
    assert!(o.status.success(), "{}", stderr(&o));
    let bin = dir.join("bin/linux/x86_64");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(library(), bin.join("libsimpleperf_report.so")).unwrap();
    copy_executable(&simpleperf(), &bin.join("simpleperf"));
    dir
}

/// Runs one of simpleperf's scripts with `args` in `cwd`; returns its stdout.
pub fn script(name: &str, args: &[&str], cwd: &Path) -> String {
    script_in(scripts(), name, args, cwd)
}

/// Runs one of the scripts in `scripts` with `args` in `cwd`; returns its stdout.
pub fn script_in(scripts: &Path, name: &str, args: &[&str], cwd: &Path) -> String {
    let o = run(Command::new("python3").arg(scripts.join(name)).args(args).current_dir(cwd));
    assert!(o.status.success(), "{name} {args:?} failed:\n{}", stderr(&o));
    stdout(&o)
}

/// PATH with a stand-in `adb` in `dir` first, which answers `adb version` and pulls nothing:
/// binary_cache_builder.py wants a phone, and finds the binaries in its local folders.
pub fn path_with_stand_in_adb(dir: &Path) -> String {
    let fake = dir.join("fakebin");
    std::fs::create_dir_all(&fake).unwrap();
    write_executable(&fake.join("adb"), "#!/bin/sh\necho 'Android Debug Bridge version 1.0.41'\nexit 0\n");
    format!("{}:{}", fake.display(), std::env::var("PATH").unwrap_or_default())
}
