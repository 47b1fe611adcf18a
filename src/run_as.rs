//! Recording an app as the app's own user, as simpleperf does on devices that are not rooted:
//! the shell user may not profile another user's processes, but `run-as PKG CMD` runs CMD as
//! the app's user, in the app's data folder, when the app is debuggable. (A profileable app
//! that is not debuggable is entered only by simpleperf_app_runner, which runs the system's
//! simpleperf alone: `rperf android record` records such an app with it.)
//! rperf copies itself there through run-as and records as the app; the recording goes into a
//! file this process created (handed over as an open file descriptor, since the app's user may
//! not create files where the output goes), and stopping is asked through a pipe, since this
//! process may not signal the app's user.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use crate::output_file::OutputFile;

/// How `rperf record --app PKG` records.
pub enum Plan {
    /// Here, as this user: root, an app of this user, or no run-as to go through.
    Direct,
    /// As the app's user, through this `run-as`.
    RunAs(PathBuf),
}

/// The user id that owns process `pid`.
fn owner(pid: i32) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}")).ok().map(|m| m.uid())
}

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(name)).find(|p| p.is_file())
}

/// Decides how to record app `pkg`.
pub fn plan(pkg: &str) -> anyhow::Result<Plan> {
    let (uid, euid) = rperf_record::launch::user_ids();
    if euid == 0 {
        return Ok(Plan::Direct);
    }
    let foreign =
        rperf_record::target::app_processes(pkg).into_iter().find_map(|p| owner(p).filter(|&u| u != uid));
    let Some(run_as) = on_path("run-as") else {
        if let Some(app_uid) = foreign {
            bail!(
                "app {pkg} runs as uid {app_uid}, and rperf (uid {uid}) may not profile another user's processes: \
                 run rperf as root, or make the app debuggable and put run-as on PATH"
            );
        }
        return Ok(Plan::Direct);
    };
    // run-as knows the app's user, and refuses apps that are not debuggable.
    let o = Command::new(&run_as)
        .args([pkg, "id", "-u"])
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", run_as.display()))?;
    if !o.status.success() {
        bail!(
            "run-as {pkg} failed ({}): without root, rperf records an app as its user only when it is \
             debuggable (android:debuggable=\"true\"); a profileable app (<profileable android:shell=\"true\"/>) is \
             recorded by the device's own simpleperf, which `rperf android record --app {pkg}` drives from the \
             host (or run `simpleperf record --app {pkg}` here); or run rperf as root",
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    let app_uid: u32 = String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .with_context(|| format!("run-as {pkg} id -u printed {:?}", String::from_utf8_lossy(&o.stdout)))?;
    Ok(if app_uid == uid { Plan::Direct } else { Plan::RunAs(run_as) })
}

/// The arguments of `rperf record` for the copy that runs as the app: the user's, without the
/// output (the copy writes into the file this process opens), with the hand-over options.
fn child_args(argv: &[String], output: &Path) -> Vec<String> {
    let mut out = vec!["record".to_string(), "--in-app".into(), "--out-fd".into(), "3".into()];
    out.extend(["--stop-fd".into(), "4".into(), "-o".into(), output.display().to_string()]);
    let mut it = argv.iter().skip(2).peekable();
    while let Some(a) = it.next() {
        if a == "--" {
            out.push(a.clone());
            out.extend(it.cloned());
            break;
        }
        if a == "-o" || a == "--output" {
            it.next();
        } else if !(a.starts_with("--output=")
            || (a.starts_with("-o") && a.len() > 2 && !a.starts_with("--")))
        {
            out.push(a.clone());
        }
    }
    out
}

/// Records app `pkg` as its user through `run_as`; `argv` is this rperf's command line.
/// Returns the exit code.
pub fn record(run_as: &Path, pkg: &str, argv: &[String], output: &Path) -> anyhow::Result<i32> {
    // The copy of rperf the app's user can run, in the app's folder.
    let exe = std::fs::File::open("/proc/self/exe").context("cannot read rperf's own binary")?;
    let st = Command::new(run_as)
        .args([pkg, "sh", "-c", "cat > rperf && chmod 700 rperf"])
        .stdin(exe)
        .status()
        .with_context(|| format!("cannot run {}", run_as.display()))?;
    if !st.success() {
        bail!("run-as {pkg} could not copy rperf into the app's folder ({st})");
    }
    let output = &std::path::absolute(output).unwrap_or_else(|_| output.to_path_buf());
    let mut file = OutputFile::recording(output)?;
    let (stop_read, stop_write) = rperf_record::launch::pipe().context("cannot create a pipe")?;
    let mut cmd = Command::new(run_as);
    cmd.arg(pkg).arg("./rperf").args(child_args(argv, output));
    rperf_record::launch::pass_fds(&mut cmd, &[(file.file().as_raw_fd(), 3), (stop_read.as_raw_fd(), 4)]);
    rperf_record::launch::install_signal_handlers();
    let mut child = cmd.spawn().with_context(|| format!("cannot run {}", run_as.display()))?;
    drop(stop_read);
    let mut stop_write = Some(stop_write);
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        // Ctrl-C, SIGTERM, SIGHUP: the recording stops when the pipe closes.
        if rperf_record::launch::stop_signal().0 != 0 {
            stop_write.take();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    if file.is_empty() {
        bail!("the recording as app {pkg} ended without writing {} ({status})", output.display());
    }
    file.finish()?;
    Ok(status.code().unwrap_or(1))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_copy_gets_the_users_options_without_the_output() {
        let argv: Vec<String> =
            ["rperf", "record", "--app", "com.x", "-o", "a.data", "-g", "--output=b", "--", "-o", "c"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let args = super::child_args(&argv, std::path::Path::new("/out/perf.data"));
        assert_eq!(
            args,
            [
                "record",
                "--in-app",
                "--out-fd",
                "3",
                "--stop-fd",
                "4",
                "-o",
                "/out/perf.data",
                "--app",
                "com.x",
                "-g",
                "--",
                "-o",
                "c"
            ]
        );
    }
}
