//! Which profiler records an app on the device, and why. A phone that is not rooted lets the
//! shell profile only its own processes; an app's are reached as the app's user:
//! - a debuggable app through `run-as`, which runs any program as the app, so rperf, pushed to
//!   the device, records it;
//! - a profileable app (Android 10 and later) only through `simpleperf_app_runner`, which runs
//!   nothing but the system's `/system/bin/simpleperf`, so that one records it, and rperf reports
//!   what it recorded;
//! - on a rooted device (`adb root`), rperf records any app directly.

use anyhow::bail;

use super::adb::Adb;

/// The device's own simpleperf (Android 10 and later).
pub const SYSTEM_SIMPLEPERF: &str = "/system/bin/simpleperf";

/// `--recorder`: which profiler records on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RecorderChoice {
    /// rperf for debuggable apps, native programs, the whole device and rooted devices; the
    /// device's simpleperf for apps that are only profileable.
    Auto,
    /// rperf, pushed to the device.
    Rperf,
    /// The device's /system/bin/simpleperf.
    Simpleperf,
}

/// The profiler that records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorder {
    Rperf,
    Simpleperf,
}

/// The profiler picked, and why (said to the user).
pub struct Choice {
    pub recorder: Recorder,
    pub why: String,
}

/// Picks the profiler for recording `app` (None: a native program or the whole device).
pub fn choose(adb: &Adb, app: Option<&str>, asked: RecorderChoice) -> anyhow::Result<Choice> {
    let serial = &adb.serial;
    let choice = |recorder, why: String| Ok(Choice { recorder, why });
    match asked {
        RecorderChoice::Rperf => {
            return choice(Recorder::Rperf, "recording with rperf (--recorder rperf)".into())
        }
        RecorderChoice::Simpleperf => {
            if !has_system_simpleperf(adb)? {
                bail!(
                    "{serial} has no {SYSTEM_SIMPLEPERF} (Android 10 and later have it): record with rperf (--recorder rperf)"
                );
            }
            return choice(
                Recorder::Simpleperf,
                format!("recording with the device's {SYSTEM_SIMPLEPERF} (--recorder simpleperf)"),
            );
        }
        RecorderChoice::Auto => {}
    }
    let Some(app) = app else {
        return choice(Recorder::Rperf, "recording with rperf, pushed to the device".into());
    };
    if adb.shell_ok(&["id", "-u"])? == "0" {
        return choice(
            Recorder::Rperf,
            format!("adb runs as root on {serial}: rperf records app {app} directly"),
        );
    }
    let run_as = adb.shell(&["run-as", app, "id", "-u"])?;
    if run_as.status.success() {
        return choice(
            Recorder::Rperf,
            format!("app {app} is debuggable: rperf records it as the app's user, through run-as"),
        );
    }
    let refused = rperf_symbols::text::printable_cut(String::from_utf8_lossy(&run_as.stderr).trim(), 200);
    let sdk: u32 = adb.shell_ok(&["getprop", "ro.build.version.sdk"])?.parse().unwrap_or(0);
    if sdk < 29 || !has_system_simpleperf(adb)? {
        bail!(
            "app {app} cannot be recorded on {serial}: it is not debuggable (run-as: {refused}), and profiling a \
             profileable app needs Android 10 or later; make the app debuggable (android:debuggable=\"true\"), or \
             root the device (adb root)"
        );
    }
    // Android 12 and later say what the app allows.
    let kind = adb.shell(&["simpleperf_app_runner", app, "--show-app-type"])?;
    if String::from_utf8_lossy(&kind.stdout).trim() == "non_profileable" {
        bail!(
            "app {app} is neither debuggable nor profileable: add <profileable android:shell=\"true\"/> to its \
             manifest's <application>, or make it debuggable (android:debuggable=\"true\"), and install it again"
        );
    }
    choice(
        Recorder::Simpleperf,
        format!(
            "app {app} is not debuggable (run-as: {refused}): Android lets the shell profile a profileable app only \
             through simpleperf_app_runner, which runs nothing but {SYSTEM_SIMPLEPERF}; recording with it \
             (rperf reports the recording; --recorder rperf to insist)"
        ),
    )
}

/// Whether the device has its own simpleperf.
pub fn has_system_simpleperf(adb: &Adb) -> anyhow::Result<bool> {
    Ok(adb.shell(&["ls", SYSTEM_SIMPLEPERF])?.status.success())
}
