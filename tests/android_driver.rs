//! `rperf android record` and `pull-binaries` against a stand-in adb (tests/programs/adb.sh) that
//! emulates a device on this machine: the x86_64 device build records the app there, and the
//! report names the app's functions from the pulled binary cache.

mod common;

use std::path::{Path, PathBuf};

use common::*;

struct Sandbox {
    dir: PathBuf,
    bin: PathBuf,
    app_binary: PathBuf,
}

const PKG: &str = "com.example.hello";

/// A device with serials `serials`, the app installed: its binary under /data/app and a start
/// script that runs it under the app's name.
fn sandbox(name: &str, serials: &[&str]) -> Sandbox {
    let dir = scratch(name);
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let adb = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/adb.sh");
    copy_executable(&adb, &bin.join("adb"));
    std::fs::write(dir.join("serials"), serials.join("\n")).unwrap();
    std::fs::write(dir.join("packages"), format!("com.android.settings\n{PKG}\n")).unwrap();
    let app_dir = dir.join("data/app").join(PKG).join("lib/x86_64");
    std::fs::create_dir_all(&app_dir).unwrap();
    let app_binary = app_dir.join("libhello");
    copy_executable(&programs().workload_fp, &app_binary);
    std::fs::create_dir_all(dir.join("apps")).unwrap();
    let start = dir.join("apps").join(PKG);
    write_executable(&start, &format!("#!/bin/bash\nexec -a {PKG} {} 1 1\n", app_binary.display()));
    Sandbox { dir, bin, app_binary }
}

impl Sandbox {
    fn rperf(&self, args: &[&str]) -> std::process::Output {
        let path = format!("{}:{}", self.bin.display(), std::env::var("PATH").unwrap());
        run(rperf().args(args).env("PATH", path).env("ADB_SANDBOX", &self.dir).current_dir(&self.dir))
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("adb.log")).unwrap_or_default()
    }
}

fn device_binary() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/device/x86_64/rperf");
    assert!(p.is_file(), "{} is missing: run ./scripts/build-device.sh (the test command does)", p.display());
    p.display().to_string()
}

#[test]
fn record_on_the_device_and_report_from_the_binary_cache() {
    let s = sandbox("android_record", &["emulator-5554"]);
    let dev = device_binary();
    let o = s.rperf(&[
        "android",
        "record",
        "--app",
        PKG,
        "--launch",
        "--device-binary",
        &dev,
        "-o",
        "perf.data",
        "--",
        "-g",
        "fp",
        "--duration",
        "10",
    ]);
    assert!(o.status.success(), "{}\nadb calls:\n{}", stderr(&o), s.log());
    let log = s.log();
    for call in [
        "adb devices".to_string(),
        "adb -s emulator-5554 shell getprop ro.product.cpu.abi".into(),
        format!("adb -s emulator-5554 shell pm list packages {PKG}"),
        format!("adb -s emulator-5554 push {dev} /data/local/tmp/rperf"),
        "adb -s emulator-5554 shell chmod 755 /data/local/tmp/rperf".into(),
        format!("adb -s emulator-5554 shell am force-stop {PKG}"),
        format!("adb -s emulator-5554 shell /data/local/tmp/rperf record --app {PKG} -o /data/local/tmp/perf.data -g fp --duration 10"),
        format!("adb -s emulator-5554 shell am start -n {PKG}/.MainActivity"),
        "adb -s emulator-5554 pull /data/local/tmp/perf.data perf.data".to_string(),
        format!("adb -s emulator-5554 pull {} binary_cache{}", s.app_binary.display(), s.app_binary.display()),
    ] {
        assert!(log.lines().any(|l| l.starts_with(&call)), "missing `{call}` in:\n{log}");
    }
    let list = std::fs::read_to_string(s.dir.join("binary_cache/build_id_list")).unwrap();
    let id = build_id_hex(&s.app_binary);
    assert!(
        list.contains(&format!("0x{id}={}", s.app_binary.display().to_string().trim_start_matches('/'))),
        "{list}"
    );
    // The app's binary leaves this machine's path: only the binary cache names its frames.
    std::fs::rename(&s.app_binary, s.app_binary.with_extension("gone")).unwrap();
    let share = |args: &[&str]| -> f64 {
        let mut a = vec!["report", "-i", "perf.data", "--sort", "symbol", "--csv"];
        a.extend_from_slice(args);
        let o = s.rperf(&a);
        assert!(o.status.success(), "{}", stderr(&o));
        csv_rows(&stdout(&o), ',')
            .iter()
            .filter(|r| r["Symbol"] == "hot_loop")
            .map(|r| pct(&r["Overhead"]))
            .sum()
    };
    assert_eq!(share(&[]), 0.0, "named without the binary");
    assert!(share(&["--symfs", "binary_cache"]) > 80.0);

    // Binaries already cached under their build id are not pulled again.
    std::fs::rename(s.app_binary.with_extension("gone"), &s.app_binary).unwrap();
    std::fs::write(s.dir.join("adb.log"), "").unwrap();
    let o = s.rperf(&["android", "pull-binaries", "-i", "perf.data"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!s.log().contains(" pull "), "pulled again:\n{}", s.log());
}

#[test]
fn device_problems_say_what_to_do() {
    let dev = device_binary();
    let record = ["android", "record", "--app", PKG, "--device-binary", &dev, "--", "--duration", "1"];
    let s = sandbox("android_none", &[]);
    let o = s.rperf(&record);
    assert!(!o.status.success() && stderr(&o).contains("no device: connect one"), "{}", stderr(&o));

    let s = sandbox("android_two", &["emulator-5554", "0123456789ABCDEF"]);
    let o = s.rperf(&record);
    let err = stderr(&o);
    assert!(!o.status.success() && err.contains("several devices") && err.contains("-s SERIAL"), "{err}");
    let o = s.rperf(&[
        "android",
        "record",
        "-s",
        "0123456789ABCDEF",
        "--app",
        "com.example.missing",
        "--device-binary",
        &dev,
    ]);
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("app com.example.missing is not installed on 0123456789ABCDEF"),
        "{err}"
    );

    // No adb on PATH.
    let o = run(rperf().args(record).env("PATH", "/nonexistent").current_dir(&s.dir));
    assert!(!o.status.success() && stderr(&o).contains("adb not found"), "{}", stderr(&o));
}
