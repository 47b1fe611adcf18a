//! Recording an app of another user through `run-as`, as on a device that is not rooted: rperf
//! runs as a "shell" user, the app as its own user, and a `run-as` stand-in (setuid root, built
//! from tests/programs/run_as.c) switches to the app's user for debuggable apps. The test
//! itself runs as root, to set up the users' files.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;

const SHELL_UID: u32 = 23456;
const APP_UID: u32 = 12345;

struct Device {
    dir: PathBuf,
    bin: PathBuf,
    apps: PathBuf,
}

/// The sandbox: `bin/run-as` (setuid root), app definitions in `apps/`, and `out/`, the shell
/// user's folder.
fn device(name: &str) -> Device {
    assert_eq!(unsafe { libc::geteuid() }, 0, "these tests set up users' files and run as root");
    let dir = scratch(name);
    let (bin, apps, out) = (dir.join("bin"), dir.join("apps"), dir.join("out"));
    for d in [&bin, &apps, &out] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::os::unix::fs::chown(&out, Some(SHELL_UID), Some(SHELL_UID)).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/run_as.c");
    let run_as = bin.join("run-as");
    let st = Command::new("gcc")
        .arg(format!("-DAPPS_DIR=\"{}\"", apps.display()))
        .arg("-o")
        .arg(&run_as)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::set_permissions(&run_as, std::fs::Permissions::from_mode(0o4755)).unwrap();
    Device { dir, bin, apps }
}

impl Device {
    /// Installs app `pkg`: its data folder, owned by the app's user, and its run-as entry.
    fn install(&self, pkg: &str, debuggable: bool) -> PathBuf {
        let data = self.dir.join("data").join(pkg);
        std::fs::create_dir_all(&data).unwrap();
        std::os::unix::fs::chown(&data, Some(APP_UID), Some(APP_UID)).unwrap();
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
        let flag = if debuggable { "yes" } else { "no" };
        std::fs::write(self.apps.join(pkg), format!("{APP_UID} {} {flag}\n", data.display())).unwrap();
        data
    }

    /// Starts the app: the workload as the app's user, named after the package.
    fn start(&self, pkg: &str, seconds: &str) -> std::process::Child {
        Command::new(&programs().workload_fp)
            .arg0(pkg)
            .args([seconds, "1"])
            .uid(APP_UID)
            .gid(APP_UID)
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// `rperf ARGS` as the shell user, with or without run-as on PATH.
    fn rperf(&self, args: &[&str], with_run_as: bool) -> Command {
        let mut cmd = rperf();
        let path = std::env::var("PATH").unwrap();
        let path = if with_run_as { format!("{}:{path}", self.bin.display()) } else { path };
        cmd.args(args).env("PATH", path).current_dir(self.dir.join("out")).uid(SHELL_UID).gid(SHELL_UID);
        cmd.stderr(Stdio::piped());
        cmd
    }
}

fn samples_of(data: &Path, pid: u32) -> u64 {
    let o = run(rperf().args(["report", "--sort", "pid", "-n", "--csv", "-i"]).arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    csv_rows(&stdout(&o), ',')
        .iter()
        .find(|r| r["Pid"] == pid.to_string())
        .map_or(0, |r| r["Sample"].parse().unwrap())
}

#[test]
fn an_app_of_another_user_is_recorded_as_that_user() {
    let d = device("runas_record");
    let pkg = "com.example.debuggable";
    let data_dir = d.install(pkg, true);
    // Runs past the recording however long the copy into the app's folder takes on a busy
    // machine; killed at the end.
    let mut app = d.start(pkg, "30");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let out = d.dir.join("out/perf.data");
    let o =
        run(&mut d.rperf(&["record", "--app", pkg, "-g", "fp", "--duration", "1", "-o", "perf.data"], true));
    app.kill().ok();
    app.wait().ok();
    assert!(o.status.success(), "{}", stderr(&o));
    // rperf ran from the app's folder, as the app's user.
    let copy = std::fs::metadata(data_dir.join("rperf")).expect("rperf copied into the app's folder");
    assert_eq!(copy.uid(), APP_UID);
    // The recording is the shell user's, readable by its owner only, with the app's samples.
    let m = std::fs::metadata(&out).expect("the recording");
    assert_eq!((m.uid(), m.mode() & 0o777), (SHELL_UID, 0o600));
    assert!(samples_of(&out, app.id()) > 200, "{}", stderr(&o));
}

#[test]
fn stopping_the_shell_side_stops_the_recording_as_the_app() {
    let d = device("runas_stop");
    let pkg = "com.example.stopme";
    d.install(pkg, true);
    let mut app = d.start(pkg, "30");
    std::thread::sleep(std::time::Duration::from_millis(200));
    // No --duration: rperf records until it is told to stop.
    let mut rec = d.rperf(&["record", "--app", pkg, "-o", "perf.data"], true).spawn().unwrap();
    // Stopped once the copy running as the app runs (copying rperf into the app's folder takes
    // a while on a busy machine).
    let copy_runs = || {
        let o = run(Command::new("pgrep").args(["-f", &format!("rperf record --in-app .*{pkg}")]));
        o.status.success()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !copy_runs() {
        assert!(std::time::Instant::now() < deadline, "the copy as the app never ran");
        assert!(rec.try_wait().unwrap().is_none(), "the recording ended before the copy ran");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(1200));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(rec.id() as i32, libc::SIGTERM) };
    let status = rec.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(rec.stderr.as_mut().unwrap(), &mut err).unwrap();
    app.kill().ok();
    app.wait().ok();
    assert!(status.success(), "{status}: {err}");
    assert!(samples_of(&d.dir.join("out/perf.data"), app.id()) > 200, "{err}");
}

#[test]
fn apps_that_cannot_be_profiled_are_named_with_the_remedy() {
    let d = device("runas_refused");
    let pkg = "com.example.release";
    d.install(pkg, false);
    let mut app = d.start(pkg, "3");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let o = run(&mut d.rperf(&["record", "--app", pkg, "--duration", "0.5", "-o", "perf.data"], true));
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains("not debuggable") && err.contains("profileable"), "{err}");
    // Without run-as: the app runs as another user, which this one may not profile.
    let o = run(&mut d.rperf(&["record", "--app", pkg, "--duration", "0.5", "-o", "perf.data"], false));
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains(&format!("runs as uid {APP_UID}")) && err.contains("run-as on PATH"), "{err}");
    app.kill().ok();
    app.wait().ok();
    assert!(!d.dir.join("out/perf.data").exists(), "a refused recording leaves no file");
}
