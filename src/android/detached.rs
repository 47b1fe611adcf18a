//! Recording without USB: `rperf android record --no-usb` starts the recorder on the device,
//! detached from adb (nohup, in the background, messages into a file there), and returns; the
//! developer unplugs the phone, runs the scenario, plugs it back in, and `rperf android stop`
//! stops the recorder (SIGINT), shows what it said and pulls the recording and its binaries.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;

use super::adb::{command_line, quote, Adb, DeviceArgs, DEVICE_DATA, DEVICE_DIR};
use super::launch::{waits_for_app, Start};
use super::pull::Landing;

/// The recorder's process id, written by the shell that becomes the recorder.
const PID_FILE: &str = "/data/local/tmp/rperf_session.pid";
/// What the recorder prints.
const LOG_FILE: &str = "/data/local/tmp/rperf_session.log";

/// Stop a recording started with `rperf android record --no-usb`, and pull it with the binaries
/// it names.
#[derive(Args, Debug)]
pub struct StopArgs {
    #[command(flatten)]
    device: DeviceArgs,
    #[command(flatten)]
    landing: Landing,
}

/// Starts `args` (a recorder's command line) on the device, detached, and returns once it
/// runs; with `start`, starts the app once the recorder waits for it.
pub fn start(adb: &Adb, args: &[String], start: Option<&Start>) -> anyhow::Result<()> {
    adb.shell_ok(&["rm", "-f", PID_FILE, LOG_FILE, DEVICE_DATA])?;
    // The shell writes its pid, then becomes the recorder; nohup keeps SIGHUP (the cable pulled)
    // from stopping it, and its messages go to a file, as no terminal stays.
    let inner = format!("echo $$ > {PID_FILE}; exec {}", command_line(args));
    let line = format!("cd {DEVICE_DIR} && nohup sh -c {} > {LOG_FILE} 2>&1 < /dev/null &", quote(&inner));
    adb.shell_line_ok(&line)?;
    let pid = wait_for(Duration::from_secs(10), || read_pid(adb))?
        .with_context(|| format!("the recorder did not start on {}: {}", adb.serial, log(adb)))?;
    if let Some(s) = start {
        let waiting = wait_for(Duration::from_secs(30), || {
            Ok((waits_for_app(&log(adb)) || !alive(adb, pid)?).then_some(()))
        })?;
        if waiting.is_none() || !alive(adb, pid)? {
            bail!("the recorder on {} is not waiting for the app: {}", adb.serial, log(adb));
        }
        s.run(adb)?;
    } else {
        // A recorder that refuses its options ends at once.
        std::thread::sleep(Duration::from_secs(1));
    }
    if !alive(adb, pid)? {
        bail!("the recorder on {} ended at once: {}", adb.serial, log(adb));
    }
    eprintln!(
        "rperf: recording on {} (pid {pid}). Unplug the USB cable, run the scenario, plug it back in, then run \
         `rperf android stop` to end the recording and pull it.",
        adb.serial
    );
    Ok(())
}

/// Fails while a recording started with `--no-usb` runs: another would write the same file
/// (and pushing rperf would replace the running binary).
pub fn check_none_runs(adb: &Adb) -> anyhow::Result<()> {
    if let Some(pid) = read_pid(adb)?.filter(|&pid| alive(adb, pid).unwrap_or(false)) {
        bail!(
            "a recording started with --no-usb still runs on {} (pid {pid}): end it with `rperf android stop` first",
            adb.serial
        );
    }
    Ok(())
}

/// Runs `rperf android stop`.
pub fn stop(a: StopArgs) -> anyhow::Result<i32> {
    let adb = Adb::connect(&a.device)?;
    let Some(pid) = read_pid(&adb)? else {
        bail!(
            "no recording was started on {} with `rperf android record --no-usb` ({PID_FILE} is missing)",
            adb.serial
        );
    };
    if alive(&adb, pid)? {
        adb.shell_ok(&["kill", "-INT", &pid.to_string()])?;
        eprintln!("rperf: waiting for the recorder (pid {pid}) to finish its recording");
        let gone = wait_for(adb_wait(&a.device), || Ok((!alive(&adb, pid)?).then_some(())))?;
        if gone.is_none() {
            bail!("the recorder (pid {pid}) on {} did not stop; its messages: {}", adb.serial, log(&adb));
        }
    } else {
        eprintln!("rperf: the recording had ended already (its app exited, or its duration passed)");
    }
    for line in log(&adb).lines() {
        eprintln!("  {}", rperf_symbols::text::printable(line));
    }
    a.landing.pull(&adb, DEVICE_DATA)?;
    adb.shell_ok(&["rm", "-f", PID_FILE, LOG_FILE])?;
    Ok(0)
}

/// How long a stopping recorder may take to write its recording (post-unwinding a long DWARF
/// recording takes a while).
fn adb_wait(d: &DeviceArgs) -> Duration {
    d.adb_timeout * 10
}

/// Asks `ready` every 100 ms until it has an answer or `limit` passes (None then).
fn wait_for<T>(
    limit: Duration,
    mut ready: impl FnMut() -> anyhow::Result<Option<T>>,
) -> anyhow::Result<Option<T>> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = ready()? {
            return Ok(Some(v));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The recorder's pid, once written.
fn read_pid(adb: &Adb) -> anyhow::Result<Option<u32>> {
    let o = adb.shell(&["cat", PID_FILE])?;
    let text = String::from_utf8_lossy(&o.stdout);
    Ok(o.status.success().then(|| text.trim().parse().ok()).flatten())
}

/// Whether the recorder, process `pid`, still runs on the device: a process of that id whose
/// command line is a recording's (a pid file left by an earlier session may name another
/// process by now, which is never signalled).
fn alive(adb: &Adb, pid: u32) -> anyhow::Result<bool> {
    let o = adb.shell(&["cat", &format!("/proc/{pid}/cmdline")])?;
    let is_recorder = o.stdout.split(|b| *b == 0).any(|arg| arg == b"record");
    Ok(o.status.success() && is_recorder)
}

/// What the recorder printed (its last 4000 bytes).
fn log(adb: &Adb) -> String {
    let text = adb.shell(&["cat", LOG_FILE]).map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let text = text.unwrap_or_default();
    let mut from = text.len().saturating_sub(4000);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    text[from..].trim().to_string()
}
