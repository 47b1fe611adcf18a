//! Permission and environment problems: each gets a message that names the setting and the
//! remedy. These tests change kernel settings (perf_event_paranoid, perf_event_mlock_kb,
//! kptr_restrict) for a moment and run rperf as `nobody`, so they need root; they run one at a
//! time and put every setting back.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use common::*;

static SERIAL: Mutex<()> = Mutex::new(());

/// Sets /proc/sys/kernel/NAME for the life of the value.
struct Sysctl {
    name: &'static str,
    old: String,
}

impl Sysctl {
    fn set(name: &'static str, value: &str) -> Sysctl {
        let path = format!("/proc/sys/kernel/{name}");
        let old = std::fs::read_to_string(&path).unwrap().trim().to_string();
        std::fs::write(&path, value).unwrap_or_else(|e| panic!("these tests need root to set {path}: {e}"));
        Sysctl { name, old }
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        std::fs::write(format!("/proc/sys/kernel/{}", self.name), &self.old).unwrap();
    }
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    assert!(unsafe { libc::geteuid() } == 0, "tests/environment.rs needs root (it changes kernel settings)");
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A scratch directory `nobody` can write.
fn open_scratch(name: &str) -> PathBuf {
    let dir = scratch(name);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// rperf run as `nobody`, with `memlock` KiB of locked memory allowed.
fn as_nobody(memlock: Option<u64>, args: &[&str]) -> Output {
    let mut cmd = Command::new("prlimit");
    if let Some(kb) = memlock {
        cmd.arg(format!("--memlock={0}:{0}", kb * 1024));
    }
    cmd.args(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_rperf"))
        .args(args);
    run(&mut cmd)
}

/// `data` given back to root (perf refuses files of other users).
fn owned(data: &Path) -> &Path {
    std::os::unix::fs::chown(data, Some(0), Some(0)).unwrap();
    data
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn perf_event_paranoid_limits_are_explained() {
    let _g = lock();
    let _p = Sysctl::set("perf_event_paranoid", "2");
    let dir = open_scratch("env_paranoid");
    let data = dir.join("user.data");
    let work = s(&programs().workload);
    // A command: the kernel is off limits, user space is recorded, and rperf says so.
    let o = as_nobody(None, &["record", "-o", s(&data), "--", work, "0.3", "1"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("not allowed to sample the kernel (perf_event_paranoid=2)")
            && err.contains("sysctl kernel.perf_event_paranoid=1"),
        "{err}"
    );
    assert!(parse_script(&perf_script(owned(&data))).len() > 300, "user-space samples were recorded");
    // System-wide: refused, with the setting, the value needed and the capability.
    let o = as_nobody(None, &["record", "-a", "--duration", "0.2", "-o", s(&dir.join("a.data"))]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("perf_event_paranoid is 2")
            && err.contains("sysctl kernel.perf_event_paranoid=0")
            && err.contains("CAP_PERFMON"),
        "{err}"
    );
    assert_eq!(err.matches("os error 13").count(), 1, "the OS error is said once: {err}");
}

#[test]
fn locked_memory_limits_shrink_the_ring_buffers_or_are_explained() {
    let _g = lock();
    let _p = Sysctl::set("perf_event_paranoid", "2");
    let dir = open_scratch("env_mlock");
    let work = s(&programs().workload);
    // A small budget: smaller ring buffers, a note, and a usable recording.
    let _m = Sysctl::set("perf_event_mlock_kb", "64");
    let data = dir.join("small.data");
    let o = as_nobody(Some(0), &["record", "-g", "-o", s(&data), "--", work, "0.3", "1"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("the locked-memory limit allows only") && err.contains("perf_event_mlock_kb"),
        "{err}"
    );
    // DWARF samples must fit the smaller rings: the stack copy shrinks too, and says so.
    assert!(err.contains("DWARF stack copies cut from 32768"), "{err}");
    assert!(parse_script(&perf_script(owned(&data))).len() > 100, "{err}");
    // No budget at all: a clear error, and the command rperf had prepared does not linger.
    drop(_m);
    let _m = Sysctl::set("perf_event_mlock_kb", "4");
    let data = dir.join("none.data");
    let o = as_nobody(Some(0), &["record", "-g", "-o", s(&data), "--", work, "0.3", "1"]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains("sysctl kernel.perf_event_mlock_kb") && err.contains("ulimit -l"), "{err}");
    let lingering: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(s(&data)))
        .collect();
    assert!(lingering.is_empty(), "left behind: {lingering:?}");
}

#[test]
fn hidden_kernel_addresses_are_explained() {
    let _g = lock();
    let _k = Sysctl::set("kptr_restrict", "2");
    let dir = scratch("env_kptr");
    let data = dir.join("k.data");
    let o = run(rperf().args(["record", "-o", s(&data), "--", "true"]));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("shows no kernel addresses")
            && err.contains("kptr_restrict=2")
            && err.contains("sysctl kernel.kptr_restrict=0"),
        "{err}"
    );
}

#[test]
fn missing_tracefs_is_mounted_or_explained() {
    let _g = lock();
    let dir = open_scratch("env_tracefs");
    let data = dir.join("t.data");
    // In a mount namespace of its own, tracefs (and debugfs, which may hold it too) is unmounted.
    let script = |who: &str| {
        format!(
            "umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug 2>/dev/null; \
             exec {who} {} record -e sched:sched_switch -o {} -- true",
            env!("CARGO_BIN_EXE_rperf"),
            s(&data)
        )
    };
    // As root, rperf mounts it, as perf does.
    let o = run(Command::new("unshare").args(["-m", "sh", "-c", &script("")]));
    assert!(o.status.success(), "{}", stderr(&o));
    // Anyone else is told how.
    let nobody = "setpriv --reuid=nobody --regid=nogroup --clear-groups";
    let o = run(Command::new("unshare").args(["-m", "sh", "-c", &script(nobody)]));
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("tracefs is not mounted") && err.contains("mount -t tracefs nodev /sys/kernel/tracing"),
        "{err}"
    );
}

#[test]
fn tracefs_closed_to_the_user_is_not_called_unmounted() {
    let _g = lock();
    let _p = Sysctl::set("perf_event_paranoid", "-1");
    let dir = open_scratch("env_tracefs_mode");
    let root = Path::new("/sys/kernel/tracing");
    assert!(root.join("events").is_dir(), "tracefs is mounted for the tests (scripts/test.sh mounts it)");
    let mode = std::fs::metadata(root).unwrap().permissions().mode();
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700)).unwrap();
    let o =
        as_nobody(None, &["record", "-e", "sched:sched_switch", "-o", s(&dir.join("t.data")), "--", "true"]);
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(mode)).unwrap();
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains("not readable by this user") && err.contains("chmod"), "{err}");
    assert!(!err.contains("not mounted"), "{err}");
}

#[test]
fn counting_at_paranoid_2_counts_user_space() {
    let _g = lock();
    let _p = Sysctl::set("perf_event_paranoid", "2");
    let work = s(&programs().workload);
    let o = as_nobody(None, &["stat", "-e", "task-clock,page-faults", "--", work, "0.2", "1"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("counting user space only") && err.contains("perf_event_paranoid=2"), "{err}");
    assert!(err.contains("task-clock") && !err.contains("<not counted>"), "{err}");
}

#[test]
fn another_users_process_is_not_blamed_on_paranoid() {
    let _g = lock();
    let _p = Sysctl::set("perf_event_paranoid", "-1");
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let o = as_nobody(None, &["record", "-p", &pid, "--duration", "0.2", "-o", "/tmp/never.data"]);
    sleeper.kill().ok();
    sleeper.wait().ok();
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains(&format!("{pid} belongs to uid 0")) && !err.contains("perf_event_paranoid"),
        "{err}"
    );
}
