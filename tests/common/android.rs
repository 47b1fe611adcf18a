//! An Android device emulated on this machine for `rperf android` tests: the stand-in adb
//! (tests/programs/adb.sh) with its run-as (tests/programs/device-run-as.sh), an app installed
//! (debuggable unless said otherwise) whose start script runs a test program under the app's
//! name, holding its apk open as Android's apps do.

use std::path::{Path, PathBuf};

use super::*;

pub const PKG: &str = "com.example.hello";

pub struct Sandbox {
    pub dir: PathBuf,
    pub bin: PathBuf,
    pub app_binary: PathBuf,
}

/// A device with serials `serials`, the app installed and debuggable.
pub fn sandbox(name: &str, serials: &[&str]) -> Sandbox {
    let dir = scratch(name);
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let programs_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs");
    copy_executable(&programs_dir.join("adb.sh"), &bin.join("adb"));
    std::fs::create_dir_all(dir.join("devbin")).unwrap();
    copy_executable(&programs_dir.join("device-run-as.sh"), &dir.join("devbin/run-as"));
    std::fs::write(dir.join("serials"), serials.join("\n")).unwrap();
    std::fs::write(dir.join("packages"), format!("com.android.settings\n{PKG}\n")).unwrap();
    std::fs::write(dir.join("debuggable"), format!("{PKG}\n")).unwrap();
    let app_dir = dir.join("data/app").join(PKG).join("lib/x86_64");
    std::fs::create_dir_all(&app_dir).unwrap();
    let app_binary = app_dir.join("libhello");
    copy_executable(&programs().workload_fp, &app_binary);
    let apk = dir.join("data/app").join(PKG).join("base.apk");
    std::fs::write(&apk, b"PK").unwrap();
    std::fs::create_dir_all(dir.join("data/local/tmp")).unwrap();
    std::fs::create_dir_all(dir.join("apps")).unwrap();
    let start = dir.join("apps").join(PKG);
    write_executable(
        &start,
        &format!("#!/bin/bash\nexec 3<{}\nexec -a {PKG} {} 1 1\n", apk.display(), app_binary.display()),
    );
    Sandbox { dir, bin, app_binary }
}

impl Sandbox {
    pub fn command(&self, args: &[&str]) -> std::process::Command {
        let path = format!("{}:{}", self.bin.display(), std::env::var("PATH").unwrap());
        let mut c = rperf();
        c.args(args).env("PATH", path).env("ADB_SANDBOX", &self.dir).current_dir(&self.dir);
        c
    }

    pub fn rperf(&self, args: &[&str]) -> std::process::Output {
        run(&mut self.command(args))
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("adb.log")).unwrap_or_default()
    }

    pub fn clear_log(&self) {
        std::fs::write(self.dir.join("adb.log"), "").unwrap();
    }

    /// Where in the adb log a call starting with `call` is, if anywhere.
    pub fn at(&self, call: &str) -> Option<usize> {
        self.log().lines().position(|l| l.starts_with(call))
    }

    /// The share of `function` in `rperf report -i DATA --sort symbol --csv EXTRA...`: its
    /// Children column with `--children`, else its Overhead.
    pub fn share(&self, data: &str, function: &str, extra: &[&str]) -> f64 {
        let mut args = vec!["report", "-i", data, "--sort", "symbol", "--csv"];
        args.extend_from_slice(extra);
        let o = self.rperf(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let column = if extra.contains(&"--children") { "Children" } else { "Overhead" };
        csv_rows(&stdout(&o), ',').iter().filter(|r| r["Symbol"] == function).map(|r| pct(&r[column])).sum()
    }

    /// The app stops being debuggable (it stays profileable).
    pub fn release_build(&self) {
        std::fs::write(self.dir.join("debuggable"), "").unwrap();
    }

    /// The device gets its own simpleperf: Android's, from the shared material.
    pub fn with_system_simpleperf(&self) {
        let shared = super::simpleperf();
        std::fs::create_dir_all(self.dir.join("system/bin")).unwrap();
        copy_executable(&shared, &self.dir.join("system/bin/simpleperf"));
    }
}

/// rperf's x86_64 device build.
pub fn device_binary() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/device/x86_64/rperf");
    assert!(p.is_file(), "{} is missing: run ./scripts/build-device.sh (the test command does)", p.display());
    p.display().to_string()
}
