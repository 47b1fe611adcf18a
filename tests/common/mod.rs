//! Helpers shared by the integration tests: building the test programs, running rperf and perf.
#![allow(dead_code)]

pub mod android;
pub mod library;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The rperf binary under test.
pub fn rperf() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rperf"))
}

/// A scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Copies an executable with `install`, so this process never holds the copy open for
/// writing: a child that another test thread forks at that moment would keep it open until its
/// exec, and running the copy would then fail with "Text file busy".
pub fn copy_executable(from: &Path, to: &Path) {
    let st = Command::new("install").arg("-m").arg("0755").arg(from).arg(to).status().unwrap();
    assert!(st.success(), "install {} {}", from.display(), to.display());
}

/// Writes an executable script, the same way as `copy_executable`.
pub fn write_executable(path: &Path, text: &str) {
    let source = path.with_extension("source");
    std::fs::write(&source, text).unwrap();
    copy_executable(&source, path);
}

/// Compiled test programs.
pub struct Programs {
    /// workload.cpp built -O2 -g with frame pointers.
    pub workload_fp: PathBuf,
    /// workload.cpp built -O2 -g without frame pointers.
    pub workload: PathBuf,
    /// mixed.cpp (time spread over libm, libc, libstdc++) built -O2 -g.
    pub mixed: PathBuf,
    /// mixed.cpp with frame pointers.
    pub mixed_fp: PathBuf,
    /// offcpu.cpp: a spinner thread and a sleeper thread that blocks in known ways.
    pub offcpu: PathBuf,
    /// spawner.cpp: forks children that exec a program, or creates and joins many threads.
    pub spawner: PathBuf,
    /// inline.cpp (-O2 -g, frame pointers): inner_kernel inlined into outer_caller.
    pub inline_cpp: PathBuf,
    /// inline.rs (rustc -O -g, frame pointers): the same in Rust.
    pub inline_rs: PathBuf,
    /// clock.cpp (frame pointers): reads the clock through the vDSO in a loop.
    pub clock: PathBuf,
    /// phases.cpp (frame pointers): hot in func_alpha (`before`) or func_beta (`after`).
    pub phases: PathBuf,
    /// overload.cpp (frame pointers): two overloads of work::spin, hot 2:1.
    pub overload: PathBuf,
    /// startup.cpp (frame pointers): a startup phase, then a steady phase; prints their lengths.
    pub startup: PathBuf,
}

/// Builds tests/programs once per test binary.
pub fn programs() -> &'static Programs {
    static P: OnceLock<Programs> = OnceLock::new();
    P.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("programs");
        std::fs::create_dir_all(&dir).unwrap();
        let build = |src: &str, out: &Path, extra: &[&str]| {
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs").join(src);
            // Each test binary builds into its own name, then renames, so parallel test
            // binaries never see a half-written executable.
            let tmp = out.with_extension(format!("tmp{}", std::process::id()));
            let st = Command::new("g++")
                .args(["-O2", "-g", "-pthread"])
                .args(extra)
                .arg(&src)
                .arg("-o")
                .arg(&tmp)
                .status()
                .expect("g++ is needed to build the test programs (apt-get install g++)");
            assert!(st.success(), "building {}", src.display());
            std::fs::rename(&tmp, out).unwrap();
        };
        let workload_fp = dir.join("workload_fp");
        let workload = dir.join("workload");
        let mixed = dir.join("mixed");
        let mixed_fp = dir.join("mixed_fp");
        build("workload.cpp", &workload_fp, &["-fno-omit-frame-pointer"]);
        build("workload.cpp", &workload, &[]);
        build("mixed.cpp", &mixed, &[]);
        build("mixed.cpp", &mixed_fp, &["-fno-omit-frame-pointer"]);
        let offcpu = dir.join("offcpu");
        build("offcpu.cpp", &offcpu, &[]);
        let spawner = dir.join("spawner");
        build("spawner.cpp", &spawner, &[]);
        let inline_cpp = dir.join("inline");
        build("inline.cpp", &inline_cpp, &["-fno-omit-frame-pointer"]);
        let inline_rs = dir.join("inline_rs");
        let tmp = inline_rs.with_extension(format!("tmp{}", std::process::id()));
        let st = Command::new("rustc")
            .args(["-C", "opt-level=2", "-g", "-C", "force-frame-pointers=yes", "-o"])
            .arg(&tmp)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/inline.rs"))
            .status()
            .expect("rustc builds the Rust test program");
        assert!(st.success(), "building inline.rs");
        std::fs::rename(&tmp, &inline_rs).unwrap();
        let clock = dir.join("clock");
        build("clock.cpp", &clock, &["-fno-omit-frame-pointer"]);
        let phases = dir.join("phases");
        build("phases.cpp", &phases, &["-fno-omit-frame-pointer"]);
        let overload = dir.join("overload");
        build("overload.cpp", &overload, &["-fno-omit-frame-pointer"]);
        let startup = dir.join("startup");
        build("startup.cpp", &startup, &["-fno-omit-frame-pointer"]);
        Programs {
            workload_fp,
            workload,
            mixed,
            mixed_fp,
            offcpu,
            spawner,
            inline_cpp,
            inline_rs,
            clock,
            phases,
            overload,
            startup,
        }
    })
}

/// Records `program args` with frame-pointer call graphs at 2000 Hz into a scratch directory
/// `name`; returns the recording.
pub fn record_fp(name: &str, program: &Path, args: &[&str]) -> PathBuf {
    let data = scratch(name).join("perf.data");
    let o = run(rperf()
        .args(["record", "-g", "fp", "-F", "2000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(program)
        .args(args));
    assert!(o.status.success(), "{}", stderr(&o));
    data
}

/// Records the sched_switch events of a shell sleeping five times into `data`.
pub fn record_sched_switch(data: &Path) {
    let o = run(rperf().args(["record", "-e", "sched:sched_switch", "-o"]).arg(data).args([
        "--",
        "sh",
        "-c",
        "for i in 1 2 3 4 5; do sleep 0.01; done",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Records `dd` copying /dev/zero to /dev/null in small blocks: time mostly in the kernel.
/// `args` go to `rperf record`; returns the recording.
pub fn record_syscalls(name: &str, args: &[&str]) -> PathBuf {
    let data = scratch(name).join("perf.data");
    let o = run(rperf().arg("record").args(args).arg("-o").arg(&data).args([
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=16",
        "count=1000000",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    data
}

/// The GNU build id of a binary, in hex, as `readelf -n` prints it.
pub fn build_id_hex(path: &Path) -> String {
    let o = run(Command::new("readelf").arg("-n").arg(path));
    let text = stdout(&o);
    let line = text.lines().find(|l| l.contains("Build ID:")).expect("binary has a build id");
    line.split("Build ID:").nth(1).unwrap().trim().to_string()
}

/// Runs a command and returns its output, failing the test with its stderr when it cannot run.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Text of stdout.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Text of stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `perf script` of a file, with call chains. Fails the test if perf cannot read it.
pub fn perf_script(data: &Path) -> String {
    let o = run(Command::new("perf").args(["script", "-F", "comm,pid,tid,event,ip,sym", "-i"]).arg(data));
    assert!(o.status.success(), "perf script failed on {}: {}", data.display(), stderr(&o));
    stdout(&o)
}

/// One sample of `perf script` output: header line and its frames (symbols).
#[derive(Debug)]
pub struct ScriptSample {
    pub comm: String,
    pub pid: i32,
    pub tid: i32,
    pub frames: Vec<String>,
}

/// Parses `perf script -F comm,pid,tid,event,ip,sym` output: a header line per sample, followed
/// by indented frame lines when the sample has a call chain.
pub fn parse_script(text: &str) -> Vec<ScriptSample> {
    let mut out: Vec<ScriptSample> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with('\t') {
            // "\t    558001da24c0 hot_loop+0x10 (/path)" or with -F sym: "\t 558001da24c0 hot_loop"
            if let (Some(s), Some(sym)) = (out.last_mut(), line.split_whitespace().nth(1)) {
                s.frames.push(sym.split('+').next().unwrap().to_string());
            }
            continue;
        }
        // "comm  pid/tid event: [ip sym]"; comm may hold spaces, so find the pid/tid token.
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(idx) = toks.iter().position(|t| {
            t.split_once('/').is_some_and(|(a, b)| a.parse::<i32>().is_ok() && b.parse::<i32>().is_ok())
        }) else {
            continue;
        };
        let (p, t) = toks[idx].split_once('/').unwrap();
        let mut frames = Vec::new();
        if let Some(ev) = toks.iter().skip(idx).position(|t| t.ends_with(':')) {
            if let Some(sym) = toks.get(idx + ev + 2) {
                frames.push(sym.split('+').next().unwrap().to_string());
            }
        }
        out.push(ScriptSample {
            comm: toks[..idx].join(" "),
            pid: p.parse().unwrap(),
            tid: t.parse().unwrap(),
            frames,
        });
    }
    out
}

/// True when this machine's PMU counts cycles (false in most VMs).
pub fn has_pmu() -> bool {
    let o = Command::new("perf").args(["stat", "-x,", "-e", "cycles", "true"]).output();
    o.map(|o| !String::from_utf8_lossy(&o.stderr).contains("not supported")).unwrap_or(false)
}

/// simpleperf's x86_64 build: $RPERF_SIMPLEPERF, else ../shared/simpleperf/bin/simpleperf.
pub fn simpleperf() -> PathBuf {
    let p = std::env::var_os("RPERF_SIMPLEPERF")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/simpleperf/bin/simpleperf"));
    assert!(p.is_file(), "simpleperf not found at {}: set RPERF_SIMPLEPERF", p.display());
    p
}

/// The simpleperf recordings shared beside the project; fails loudly when they are missing.
pub fn simpleperf_testdata() -> PathBuf {
    let dir = std::env::var_os("RPERF_SIMPLEPERF_TESTDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata/simpleperf"));
    assert!(
        dir.join("perf.data").is_file(),
        "simpleperf test recordings not found at {} (expected ../shared/testdata/simpleperf beside the project, or set RPERF_SIMPLEPERF_TESTDATA)",
        dir.display()
    );
    dir
}

/// The rows of the tables of `rperf report --csv` (every event's), as maps from simpleperf's
/// column names (`Overhead`, `Children`, `Self`, `Sample`, `Shared Object`, `Symbol`,
/// `EventCount`, `EventName`, ...) to cells, quotes removed.
pub fn csv_rows(text: &str, sep: char) -> Vec<std::collections::HashMap<String, String>> {
    let mut out = Vec::new();
    let mut head: Option<Vec<String>> = None;
    for line in text.lines() {
        if line.is_empty() {
            head = None;
            continue;
        }
        let cells = csv_cells(line, sep);
        match &head {
            None if cells.first().is_some_and(|c| c == "Overhead" || c == "Children") => head = Some(cells),
            None => {}
            Some(h) => out.push(h.iter().cloned().zip(cells).collect()),
        }
    }
    out
}

fn csv_cells(line: &str, sep: char) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                cells.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            c if c == sep && !quoted => cells.push(String::new()),
            c => cells.last_mut().unwrap().push(c),
        }
    }
    cells
}

/// A percentage cell (`12.34%`) as a number.
pub fn pct(cell: &str) -> f64 {
    cell.trim_end_matches('%').parse().unwrap_or_else(|_| panic!("not a percentage: {cell}"))
}
