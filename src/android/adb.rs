//! One Android device, through `adb`: which device, and every adb call bounded in time and in
//! the output kept.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;

/// Which device, and how long to wait for adb: the options of every `rperf android` command.
#[derive(Args, Debug)]
pub struct DeviceArgs {
    /// The device's serial (`adb devices`), when several are connected.
    #[arg(short = 's', value_name = "SERIAL")]
    pub serial: Option<String>,
    /// How long an adb command may take before rperf gives up on it; pushes and pulls get ten
    /// times as long.
    #[arg(long = "adb-timeout", value_name = "SECONDS", default_value = "30", value_parser = crate::target_args::parse_seconds)]
    pub adb_timeout: Duration,
}

pub const DEVICE_DIR: &str = "/data/local/tmp";

/// Where the device's recorder writes the recording.
pub const DEVICE_DATA: &str = "/data/local/tmp/perf.data";

/// One device, through adb.
pub struct Adb {
    adb: PathBuf,
    pub serial: String,
    /// The most an adb command may take (pushes and pulls: ten times as much).
    timeout: Duration,
}

/// The most of an adb command's output kept (the rest is read and dropped): what rperf reads
/// of it is a few lines.
const OUTPUT_KEPT: usize = 1 << 20;

/// Runs `cmd` (an adb call, `what` in messages) for at most `limit`, keeping at most
/// `OUTPUT_KEPT` bytes of its stdout and of its stderr. An adb that never answers (a stuck
/// server, a device that stopped responding) is killed, and said so.
fn run_limited(cmd: &mut Command, limit: Duration, what: &str) -> anyhow::Result<Output> {
    use std::io::Read;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {what}"))?;
    let drain = |mut from: Box<dyn Read + Send>| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 64 * 1024];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let room = OUTPUT_KEPT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            tx.send(kept).ok();
        });
        rx
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() >= deadline {
            child.kill().ok();
            child.wait().ok();
            bail!(
                "{what} did not answer within {} s: the device or the adb server may be stuck (`adb kill-server`, \
                 reconnect the device), or give it longer with --adb-timeout SECONDS",
                limit.as_secs_f64()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // What adb started and left running may hold the pipes open: its output is not waited for.
    let take =
        |rx: std::sync::mpsc::Receiver<Vec<u8>>| rx.recv_timeout(Duration::from_secs(1)).unwrap_or_default();
    Ok(Output { status, stdout: take(out), stderr: take(err) })
}

impl Adb {
    /// The device to use: the only one connected, or the one `-s` names.
    pub fn connect(device: &DeviceArgs) -> anyhow::Result<Adb> {
        let (serial, timeout) = (device.serial.as_deref(), device.adb_timeout);
        let adb = std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join("adb")).find(|p| p.is_file()))
            .context(
                "adb not found: install Android's platform tools (apt-get install adb) and put adb on PATH",
            )?;
        let o = run_limited(Command::new(&adb).arg("devices"), timeout, "adb devices")?;
        let text = String::from_utf8_lossy(&o.stdout);
        let devices: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("List of devices"))
            .skip(1)
            .filter_map(|l| l.split_once('\t').filter(|(_, state)| *state == "device").map(|(s, _)| s))
            .collect();
        let serial = match (serial, devices.as_slice()) {
            (_, []) => bail!("no device: connect one with USB debugging on (adb devices lists none)"),
            (Some(s), found) if !found.contains(&s) => {
                bail!("no device {s}: adb devices lists {}", found.join(", "))
            }
            (Some(s), _) => s.to_string(),
            (None, [one]) => one.to_string(),
            (None, several) => bail!("several devices ({}): pick one with -s SERIAL", several.join(", ")),
        };
        Ok(Adb { adb, serial, timeout })
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new(&self.adb);
        c.arg("-s").arg(&self.serial);
        c
    }

    /// `adb shell ARGS`, its output.
    /// `adb shell ARGS`: the program and its arguments, each quoted for the device's shell (adb
    /// joins them into one command line there), so that a name never becomes shell syntax.
    pub fn shell(&self, args: &[&str]) -> anyhow::Result<Output> {
        self.shell_line(&command_line(args))
    }

    /// `adb shell ARGS`, which must succeed: its output.
    pub fn shell_ok(&self, args: &[&str]) -> anyhow::Result<String> {
        self.shell_line_ok(&command_line(args))
    }

    /// `adb shell LINE`: a command line for the device's shell, as written (redirections and
    /// all); whatever it quotes from outside must go through `quote`.
    pub fn shell_line(&self, line: &str) -> anyhow::Result<Output> {
        run_limited(self.cmd().arg("shell").arg(line), self.timeout, &format!("adb shell {line}"))
    }

    /// `adb shell LINE`, which must succeed: its output.
    pub fn shell_line_ok(&self, line: &str) -> anyhow::Result<String> {
        let o = self.shell_line(line)?;
        if !o.status.success() {
            bail!("adb shell {line} failed: {}", String::from_utf8_lossy(&o.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
    }

    /// Fails unless app `app` is installed.
    pub fn check_installed(&self, app: &str) -> anyhow::Result<()> {
        let packages = self.shell_ok(&["pm", "list", "packages", app])?;
        if !packages.lines().any(|l| l.trim() == format!("package:{app}")) {
            bail!(
                "app {app} is not installed on {} (adb shell pm list packages lists it when it is)",
                self.serial
            );
        }
        Ok(())
    }

    pub fn push(&self, from: &Path, to: &str) -> anyhow::Result<()> {
        let what = format!("adb push {} {to}", from.display());
        let o = run_limited(self.cmd().arg("push").arg(from).arg(to), self.timeout * 10, &what)?;
        if !o.status.success() {
            bail!("adb push {} {to} failed: {}", from.display(), String::from_utf8_lossy(&o.stderr).trim());
        }
        Ok(())
    }

    pub fn pull(&self, from: &str, to: &Path) -> anyhow::Result<()> {
        let what = format!("adb pull {from}");
        let o = run_limited(self.cmd().arg("pull").arg(from).arg(to), self.timeout * 10, &what)?;
        if !o.status.success() {
            bail!("adb pull {from} failed: {}", String::from_utf8_lossy(&o.stderr).trim());
        }
        Ok(())
    }
}

/// `arg` quoted for the device's shell: adb joins its arguments into one command line there.
pub fn quote(arg: &str) -> String {
    if !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./,:=+@%".contains(&b)) {
        return arg.to_string();
    }
    format!("'{}'", arg.replace('\'', "'\\''"))
}

/// `args` as one command line for the device's shell.
pub fn command_line<S: AsRef<str>>(args: &[S]) -> String {
    args.iter().map(|a| quote(a.as_ref())).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn arguments_reach_the_devices_shell_as_they_are() {
        assert_eq!(
            super::command_line(&["-e", "cpu-clock", "--duration", "2.5"]),
            "-e cpu-clock --duration 2.5"
        );
        assert_eq!(super::quote("a b"), "'a b'");
        assert_eq!(super::quote("it's"), "'it'\\''s'");
        assert_eq!(super::quote("$(reboot)"), "'$(reboot)'");
        assert_eq!(super::quote(""), "''");
    }
}
