//! The ways `rperf android` records an app, each end to end through the stand-in adb
//! (tests/programs/adb.sh): with the device's own simpleperf for an app that is only
//! profileable (Android's simpleperf, from the shared material, serves as the device's
//! /system/bin/simpleperf), from the app's own code through simpleperf's app API, and without
//! USB; each pulled recording is reported with names.

mod common;

use std::path::{Path, PathBuf};

use common::android::*;
use common::*;

/// The samples whose call chains hold `function`, as a share of all (`--children`), named
/// from the binary cache.
fn children_share(s: &Sandbox, data: &Path, function: &str) -> f64 {
    s.share(data.to_str().unwrap(), function, &["--symfs", "binary_cache", "--children"])
}

#[test]
fn a_profileable_app_is_recorded_with_the_devices_simpleperf() {
    let s = sandbox("android_profileable", &["emulator-5554"]);
    s.release_build();
    s.with_system_simpleperf();
    let o = s.rperf(&["android", "record", "--app", PKG, "--launch", "--", "-g", "fp", "--duration", "3"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}\nadb calls:\n{}", s.log());
    assert!(err.contains("is not debuggable") && err.contains("simpleperf_app_runner"), "{err}");
    let serial = "adb -s emulator-5554 shell";
    let order = [
        format!("{serial} id -u"),
        format!("{serial} run-as {PKG} id -u"),
        format!("{serial} getprop ro.build.version.sdk"),
        format!("{serial} ls /system/bin/simpleperf"),
        format!("{serial} am force-stop {PKG}"),
        format!("{serial} /system/bin/simpleperf record --app {PKG} -o /data/local/tmp/perf.data --call-graph fp --duration 3"),
        format!("{serial} am start -n {PKG}/.MainActivity"),
        "adb -s emulator-5554 pull /data/local/tmp/perf.data".into(),
        format!("adb -s emulator-5554 pull {}", s.app_binary.display()),
    ];
    let at: Vec<Option<usize>> = order.iter().map(|c| s.at(c)).collect();
    assert!(at.iter().all(Option::is_some) && at.windows(2).all(|w| w[0] < w[1]), "{at:?}\n{}", s.log());
    assert!(!s.log().contains(" push "), "rperf was pushed:\n{}", s.log());
    // simpleperf's recording, reported by rperf with the pulled binaries.
    assert!(children_share(&s, &s.dir.join("perf.data"), "hot_loop") > 50.0);
}

#[test]
fn the_recorder_is_picked_for_the_app_and_can_be_told() {
    let s = sandbox("android_recorder_choice", &["emulator-5554"]);
    let dev = device_binary();
    s.release_build();
    // No debuggable app, no system simpleperf, no root: nothing can record it.
    let o = s.rperf(&["android", "record", "--app", PKG, "--device-binary", &dev]);
    let err = stderr(&o);
    assert!(!o.status.success() && err.contains("not debuggable") && err.contains("adb root"), "{err}");
    let o = s.rperf(&["android", "record", "--app", PKG, "--recorder", "simpleperf"]);
    assert!(!o.status.success() && stderr(&o).contains("has no /system/bin/simpleperf"), "{}", stderr(&o));
    s.with_system_simpleperf();
    let o = s.rperf(&["android", "record", "--app", PKG, "--", "--control", "fifo:ctl"]);
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("--control: the device's simpleperf has no such option"),
        "{err}"
    );
    // A rooted device: rperf records any app.
    std::fs::write(s.dir.join("rooted"), "").unwrap();
    s.clear_log();
    let o = s.rperf(&[
        "android",
        "record",
        "--app",
        PKG,
        "--launch",
        "--device-binary",
        &dev,
        "--",
        "--duration",
        "3",
    ]);
    assert!(o.status.success(), "{}\n{}", stderr(&o), s.log());
    assert!(stderr(&o).contains("adb runs as root on emulator-5554"), "{}", stderr(&o));
    assert!(
        s.at(&format!("adb -s emulator-5554 shell /data/local/tmp/rperf record --app {PKG}")).is_some(),
        "{}",
        s.log()
    );
    assert!(children_share(&s, &s.dir.join("perf.data"), "hot_loop") > 50.0);
}

#[test]
fn an_instrumentation_test_named_with_t_is_run_once_recording_waits() {
    let s = sandbox("android_test", &["emulator-5554"]);
    let dev = device_binary();
    let test = "com.example.hello.StartupTest";
    let o = s.rperf(&[
        "android",
        "record",
        "--app",
        PKG,
        "-t",
        test,
        "--device-binary",
        &dev,
        "--",
        "-g",
        "fp",
        "--duration",
        "10",
    ]);
    assert!(o.status.success(), "{}\nadb calls:\n{}", stderr(&o), s.log());
    assert!(stderr(&o).contains("is debuggable"), "{}", stderr(&o));
    let record = s.at(&format!("adb -s emulator-5554 shell /data/local/tmp/rperf record --app {PKG}"));
    let instrument = s.at(&format!(
        "adb -s emulator-5554 shell am instrument -e class {test} {PKG}/androidx.test.runner.AndroidJUnitRunner"
    ));
    assert!(record.is_some() && record < instrument, "{}", s.log());
    assert!(children_share(&s, &s.dir.join("perf.data"), "hot_loop") > 50.0);
}

/// tests/programs/app_api.c, built for this test.
fn app_api_program(dir: &Path) -> PathBuf {
    let out = dir.join("app_api");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/app_api.c");
    let o = run(std::process::Command::new("gcc")
        .args(["-O2", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&out)
        .arg(&src));
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

#[test]
fn an_app_records_its_own_code_path_through_the_app_api() {
    let s = sandbox("android_app_api", &["emulator-5554"]);
    let dev = device_binary();
    // Nothing recorded yet: nothing to collect, and no error.
    let o = s.rperf(&["android", "api", "collect", "--app", PKG]);
    assert!(o.status.success() && stderr(&o).contains("has no recordings"), "{}", stderr(&o));
    let o = s.rperf(&["android", "api", "prepare", "--app", PKG, "--device-binary", &dev]);
    assert!(o.status.success(), "{}\nadb calls:\n{}", stderr(&o), s.log());
    for call in [
        "shell setprop security.perf_harden 0".to_string(),
        format!("push {dev} /data/local/tmp/simpleperf"),
        "shell /data/local/tmp/simpleperf list tracepoint --ids > /data/local/tmp/tracepoint_events".into(),
    ] {
        assert!(s.log().contains(&call), "missing `{call}`:\n{}", s.log());
    }
    let ids = std::fs::read_to_string(s.dir.join("data/local/tmp/tracepoint_events")).unwrap();
    assert!(ids.lines().any(|l| l.starts_with("sched:sched_switch ")), "{}", &ids[..ids.len().min(300)]);

    // The app: ProfileSession's steps and command line, its messages sent to a log daemon.
    let app_dir = s.dir.join("data/data").join(PKG);
    std::fs::create_dir_all(&app_dir).unwrap();
    let logd_path = s.dir.join("logdw");
    let logd = std::os::unix::net::UnixDatagram::bind(&logd_path).unwrap();
    logd.set_nonblocking(true).unwrap();
    let app = app_api_program(&s.dir);
    let o = run(std::process::Command::new(&app)
        .arg(s.dir.join("data/local/tmp"))
        .arg(&app_dir)
        .arg("cpu-clock")
        .env("RPERF_LOGD_SOCKET", &logd_path));
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let mut logged = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = logd.recv(&mut buf) {
        logged.push(buf[..n].to_vec());
    }
    let wrote = logged
        .iter()
        .find(|p| p.windows(10).any(|w| w == b"rperf: wro"))
        .expect("rperf's messages in the log");
    assert_eq!(&wrote[11..18], b"\x04rperf\0", "priority info, tag rperf");
    assert!(!stderr(&o).contains("rperf: wrote"), "messages on stderr too: {}", stderr(&o));

    let o = s.rperf(&["android", "api", "collect", "--app", PKG]);
    assert!(o.status.success(), "{}\nadb calls:\n{}", stderr(&o), s.log());
    let collected: Vec<PathBuf> =
        std::fs::read_dir(s.dir.join("simpleperf_data")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(collected.len(), 1, "{collected:?}");
    assert!(
        std::fs::read_dir(app_dir.join("simpleperf_data")).unwrap().next().is_none(),
        "left on the device"
    );
    assert!(s.log().contains(&format!("shell run-as {PKG} cat simpleperf_data/")), "{}", s.log());
    // Recorded while the session ran, not while it was paused.
    let data = &collected[0];
    assert!(children_share(&s, data, "recorded_first") > 20.0);
    assert!(children_share(&s, data, "recorded_again") > 20.0);
    assert!(children_share(&s, data, "while_paused") < 2.0);

    // The app is a release build now, profileable only: its recordings are read by the device's
    // simpleperf (here a stand-in for its api-collect, which zips the app's recordings).
    let o = run(std::process::Command::new(&app)
        .arg(s.dir.join("data/local/tmp"))
        .arg(&app_dir)
        .arg("cpu-clock"));
    assert!(o.status.success(), "{}", stderr(&o));
    s.release_build();
    std::fs::create_dir_all(s.dir.join("system/bin")).unwrap();
    write_executable(
        &s.dir.join("system/bin/simpleperf"),
        "#!/bin/sh
[ \"$1 $2 $4\" = \"api-collect --app -o\" ] || exit 1
\
         cd \"$ADB_SANDBOX/data/data/$3/simpleperf_data\" || exit 1
\
         python3 -c 'import os, sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], \"w\", zipfile.ZIP_DEFLATED) as z:\n    [z.write(f) for f in sorted(os.listdir(\".\"))]' \"$5\" && rm -f ./*
",
    );
    s.clear_log();
    let o = s.rperf(&["android", "api", "collect", "--app", PKG, "-o", "release_data"]);
    assert!(o.status.success(), "{}\nadb calls:\n{}", stderr(&o), s.log());
    assert!(stderr(&o).contains("is not debuggable"), "{}", stderr(&o));
    let api_collect = s.at(&format!(
        "adb -s emulator-5554 shell /system/bin/simpleperf api-collect --app {PKG} -o /data/local/tmp/simpleperf_data.zip"
    ));
    let pulled = s.at("adb -s emulator-5554 pull /data/local/tmp/simpleperf_data.zip");
    assert!(api_collect.is_some() && api_collect < pulled, "{}", s.log());
    let collected: Vec<PathBuf> =
        std::fs::read_dir(s.dir.join("release_data")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(collected.len(), 1, "{collected:?}");
    assert!(children_share(&s, &collected[0], "recorded_again") > 20.0);
}

#[test]
fn recording_goes_on_without_usb_and_stop_brings_it_back() {
    let s = sandbox("android_no_usb", &["emulator-5554"]);
    let dev = device_binary();
    // The app runs until it is stopped.
    let start = s.dir.join("apps").join(PKG);
    let script = std::fs::read_to_string(&start).unwrap().replace(" 1 1\n", " 60 1\n");
    write_executable(&start, &script);
    let o = s.rperf(&[
        "android",
        "record",
        "--app",
        PKG,
        "--launch",
        "--no-usb",
        "--device-binary",
        &dev,
        "--",
        "-g",
        "fp",
    ]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}\nadb calls:\n{}", s.log());
    assert!(err.contains("Unplug the USB cable") && err.contains("rperf android stop"), "{err}");
    let started = s.at(&format!("adb -s emulator-5554 shell am start -n {PKG}/.MainActivity"));
    assert!(started.is_some(), "{}", s.log());
    // One recording at a time.
    let o = s.rperf(&["android", "record", "--app", PKG, "--no-usb", "--device-binary", &dev]);
    assert!(!o.status.success() && stderr(&o).contains("still runs"), "{}", stderr(&o));
    // The cable is pulled: adb sees no device, and the recording goes on.
    std::fs::write(s.dir.join("serials"), "").unwrap();
    let o = s.rperf(&["android", "stop"]);
    assert!(!o.status.success() && stderr(&o).contains("no device"), "{}", stderr(&o));
    std::thread::sleep(std::time::Duration::from_secs(1));
    std::fs::write(s.dir.join("serials"), "emulator-5554").unwrap();
    let o = s.rperf(&["android", "stop"]);
    run(std::process::Command::new("pkill").args(["-f", &format!("^{PKG}( |$)")]));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}\nadb calls:\n{}", s.log());
    let order = [
        format!("adb -s emulator-5554 shell cd /data/local/tmp && nohup sh -c 'echo $$ > /data/local/tmp/rperf_session.pid; exec /data/local/tmp/rperf record --app {PKG} -o /data/local/tmp/perf.data -g fp' > /data/local/tmp/rperf_session.log 2>&1 < /dev/null &"),
        format!("adb -s emulator-5554 shell am start -n {PKG}/.MainActivity"),
        "adb -s emulator-5554 shell kill -INT ".into(),
        "adb -s emulator-5554 pull /data/local/tmp/perf.data".into(),
        format!("adb -s emulator-5554 pull {}", s.app_binary.display()),
    ];
    let at: Vec<Option<usize>> = order.iter().map(|c| s.at(c)).collect();
    assert!(at.iter().all(Option::is_some) && at.windows(2).all(|w| w[0] < w[1]), "{at:?}\n{}", s.log());
    assert!(err.contains("Samples recorded:"), "the recorder's messages are shown: {err}");
    assert!(children_share(&s, &s.dir.join("perf.data"), "hot_loop") > 50.0);
    // Stopped once: a second stop says there is nothing to stop.
    let o = s.rperf(&["android", "stop"]);
    assert!(!o.status.success() && stderr(&o).contains("no recording was started"), "{}", stderr(&o));
    // A pid file left behind names another process by now: it is never signalled.
    let mut other = std::process::Command::new("sleep").arg("60").spawn().unwrap();
    std::fs::write(s.dir.join("data/local/tmp/rperf_session.pid"), format!("{}\n", other.id())).unwrap();
    let o = s.rperf(&["android", "stop"]);
    assert!(stderr(&o).contains("had ended already"), "{}", stderr(&o));
    assert!(other.try_wait().unwrap().is_none(), "another process was signalled");
    other.kill().ok();
    other.wait().ok();
}

/// The command line simpleperf's shell side runs in an app's context (through
/// simpleperf_app_runner or run-as), which cannot create files where the output goes nor be
/// signalled by the shell: the recording goes into the descriptor the shell opened, and ends
/// when the shell closes the pipe it passed.
#[test]
fn the_app_context_command_line_records_into_the_descriptors_it_is_given() {
    let dir = scratch("android_in_app_fds");
    let out = dir.join("perf.data");
    let mut app = std::process::Command::new(&programs().workload_fp).args(["30", "1"]).spawn().unwrap();
    let script = format!(
        "exec {} record --in-app --log info --out-fd 3 --stop-signal-fd 4 -p {} -e cpu-clock -f 1000 \
         --call-graph fp --duration 60 3>{} 4< <(sleep 1.5)",
        env!("CARGO_BIN_EXE_rperf"),
        app.id(),
        out.display()
    );
    let started = std::time::Instant::now();
    let o = run(std::process::Command::new("bash").arg("-c").arg(&script));
    let took = started.elapsed();
    app.kill().ok();
    app.wait().ok();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(took < std::time::Duration::from_secs(30), "not stopped by the closed pipe: {took:?}");
    let o = run(rperf().args(["report", "--sort", "symbol", "--csv", "-i"]).arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    let hot: f64 = csv_rows(&stdout(&o), ',')
        .iter()
        .filter(|r| r["Symbol"] == "hot_loop")
        .map(|r| pct(&r["Overhead"]))
        .sum();
    assert!(hot > 50.0, "{}", stdout(&o));
}

/// adb joins its arguments into one command line for the device's shell: names from the user
/// (a package, a program) reach the device quoted, never as shell syntax.
#[test]
fn names_reach_the_devices_shell_quoted() {
    let s = sandbox("android_quoting", &["emulator-5554"]);
    let planted = s.dir.join("planted");
    let app = format!("com.x;touch {}", planted.display());
    // Installed, as far as the stand-in's package manager goes: the name reaches run-as.
    std::fs::write(s.dir.join("packages"), format!("{app}\n")).unwrap();
    let o = s.rperf(&["android", "api", "collect", "--app", &app]);
    assert!(!o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot read the recordings of app com.x;touch"), "{}", stderr(&o));
    assert!(!planted.exists(), "the package name ran as a command:\n{}", s.log());
}
