//! `rperf android record` and `pull-binaries` against a stand-in adb (tests/programs/adb.sh) that
//! emulates a device on this machine: the x86_64 device build records the app there, and the
//! report names the app's functions from the pulled binary cache.

mod common;

use common::android::*;
use common::*;

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
        // Pulled into a private folder first, then copied to their places.
        "adb -s emulator-5554 pull /data/local/tmp/perf.data /tmp/rperf-pull-".to_string(),
        format!("adb -s emulator-5554 pull {} /tmp/rperf-pull-", s.app_binary.display()),
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
    let share = |args: &[&str]| s.share("perf.data", "hot_loop", args);
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

/// `data` with its build-id table replaced by `entries` (path, build id).
fn with_build_ids(data: &[u8], entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    let index = u64_at(data, 40) + u64_at(data, 48);
    let bits: Vec<usize> = (0..256).filter(|i| data[72 + i / 8] & (1 << (i % 8)) != 0).collect();
    assert!(bits.contains(&2), "the recording has a build-id table");
    let mut table = Vec::new();
    for (path, id) in entries {
        let mut name = path.as_bytes().to_vec();
        name.resize((name.len() / 8 + 1) * 8, 0);
        table.extend_from_slice(&0u32.to_le_bytes());
        table.extend_from_slice(&2u16.to_le_bytes()); // PERF_RECORD_MISC_USER
        table.extend_from_slice(&((8 + 4 + 24 + name.len()) as u16).to_le_bytes());
        table.extend_from_slice(&(-1i32).to_le_bytes());
        let mut raw = id.clone();
        raw.resize(24, 0);
        table.extend_from_slice(&raw);
        table.extend_from_slice(&name);
    }
    let mut out = data[..index + 16 * bits.len()].to_vec();
    let mut offset = out.len();
    for (i, bit) in bits.iter().enumerate() {
        let entry = index + 16 * i;
        let (at, len) = (u64_at(data, entry), u64_at(data, entry + 8));
        let content = if *bit == 2 { table.clone() } else { data[at..at + len].to_vec() };
        out[entry..entry + 8].copy_from_slice(&(offset as u64).to_le_bytes());
        out[entry + 8..entry + 16].copy_from_slice(&(content.len() as u64).to_le_bytes());
        offset += content.len();
        out.extend_from_slice(&content);
    }
    out
}

/// A recording names any path it likes, and a binary cache may hold links (checked into a
/// repository, say): nothing is written outside the cache, through a link, or for a path that
/// is not a plain absolute file path; each such binary is skipped and listed, and the rest are
/// pulled.
#[test]
fn pulled_binaries_stay_inside_the_binary_cache() {
    let s = sandbox("android_pull_hostile", &["emulator-5554"]);
    let data = record_fp("android_pull_hostile_rec", &programs().workload_fp, &["0.1", "1"]);
    let good_id = hex_bytes(&build_id_hex(&s.app_binary));
    for rel in ["data/evil/libx.so", "data/app2/liby.so"] {
        let p = s.dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(&s.app_binary, &p).unwrap();
    }
    let cache = s.dir.join("binary_cache");
    let outside = s.dir.join("outside");
    std::fs::create_dir_all(cache.join("data/app2")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, cache.join("data/evil")).unwrap();
    std::os::unix::fs::symlink(s.dir.join("nowhere/liby.so"), cache.join("data/app2/liby.so")).unwrap();
    let long = format!("/data/{}", "a".repeat(300));
    let entries: Vec<(String, Vec<u8>)> = [
        s.app_binary.display().to_string(),
        "/".into(),
        "/data/x\nrperf-forged=line".into(),
        long,
        "/data/../../etc/passwd".into(),
        "/data/evil/libx.so".into(),
        "/data/app2/liby.so".into(),
    ]
    .into_iter()
    .map(|p| (p, good_id.clone()))
    .collect();
    let crafted = s.dir.join("crafted.data");
    std::fs::write(&crafted, with_build_ids(&std::fs::read(&data).unwrap(), &entries)).unwrap();
    let o = s.rperf(&["android", "pull-binaries", "-i", crafted.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}\n{}", s.log());
    assert!(err.contains("1 binaries pulled") && err.contains("6 binaries were not pulled"), "{err}");
    for why in ["names no file", "control character", "longer than 255", ". or .. component", "symbolic link"]
    {
        assert!(err.contains(why), "{why}: {err}");
    }
    assert!(cache.join(s.app_binary.strip_prefix("/").unwrap()).is_file());
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "written through a link");
    assert!(!s.dir.join("nowhere").exists(), "written through a dangling link");
    assert!(!s.log().lines().any(|l| l.ends_with(" pull / ") || l.contains("pull / /")), "{}", s.log());
    let list = std::fs::read_to_string(cache.join("build_id_list")).unwrap();
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(list.starts_with("0x") && !list.contains("forged"), "{list}");
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
}

/// An adb that never answers, or floods its output, is given up on in time with a message
/// saying what to do, and its output is not kept whole.
#[test]
fn an_adb_that_hangs_or_floods_is_given_up_on() {
    let s = sandbox("android_adb_hangs", &["emulator-5554"]);
    write_executable(&s.bin.join("adb"), "#!/bin/sh\nexec sleep 600\n");
    let started = std::time::Instant::now();
    let o = s.rperf(&["android", "pull-binaries", "--adb-timeout", "0.5"]);
    let err = stderr(&o);
    assert!(!o.status.success() && err.contains("adb devices did not answer within 0.5 s"), "{err}");
    assert!(err.contains("--adb-timeout"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    write_executable(&s.bin.join("adb"), "#!/bin/sh\nhead -c 300000000 /dev/zero | tr '\\0' x\necho\n");
    let o = s.rperf(&["android", "pull-binaries"]);
    let err = stderr(&o);
    assert!(!o.status.success() && err.contains("no device"), "{}", &err[..err.len().min(500)]);
}

#[test]
fn an_activity_named_with_a_is_started_once_recording_waits() {
    let s = sandbox("android_activity", &["emulator-5554"]);
    let dev = device_binary();
    let args = ["android", "record", "--app", PKG, "-a", ".SecondActivity", "--device-binary", &dev];
    let o = s.rperf(&[&args[..], &["--", "-g", "fp", "--duration", "10"]].concat());
    assert!(o.status.success(), "{}\nadb calls:\n{}", stderr(&o), s.log());
    let log = s.log();
    let at = |call: &str| log.lines().position(|l| l.starts_with(call));
    let stop = at(&format!("adb -s emulator-5554 shell am force-stop {PKG}"));
    let record = at(&format!("adb -s emulator-5554 shell /data/local/tmp/rperf record --app {PKG}"));
    let start = at(&format!("adb -s emulator-5554 shell am start -n {PKG}/.SecondActivity"));
    assert!(stop < record && record < start && stop.is_some(), "{log}");
    assert!(!log.contains("resolve-activity"), "the launcher activity was looked up:\n{log}");
    // The app ran while recorded.
    let o = s.rperf(&["report", "-i", "perf.data", "--sort", "comm", "-n"]);
    assert!(o.status.success() && stdout(&o).contains("Samples: "), "{}", stderr(&o));
}

#[test]
fn a_native_program_is_recorded_by_name_and_the_whole_device_with_system_wide() {
    let s = sandbox("android_native", &["emulator-5554"]);
    let dev = device_binary();
    // rperf waits for the native program, as app_profiler.py's -np does; it starts later, as
    // a daemon would.
    let args = ["android", "record", "-np", "rperfnatived", "--device-binary", &dev];
    let path = format!("{}:{}", s.bin.display(), std::env::var("PATH").unwrap());
    let recording = rperf()
        .args([&args[..], &["--", "-g", "fp", "--duration", "1"]].concat())
        .env("PATH", path)
        .env("ADB_SANDBOX", &s.dir)
        .current_dir(&s.dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while s.log().matches("shell pidof rperfnatived").count() < 3 {
        assert!(std::time::Instant::now() < deadline, "no pidof calls:\n{}", s.log());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut daemon = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("exec -a rperfnatived {} 3 1", programs().workload_fp.display()))
        .spawn()
        .unwrap();
    let pid = daemon.id();
    let o = recording.wait_with_output().unwrap();
    daemon.kill().ok();
    daemon.wait().ok();
    assert!(o.status.success(), "{}\nadb calls:\n{}", stderr(&o), s.log());
    assert!(
        stderr(&o).contains("waiting for native program rperfnatived on emulator-5554"),
        "{}",
        stderr(&o)
    );
    let log = s.log();
    let at = |call: &str| log.lines().position(|l| l.starts_with(call));
    let found = at("adb -s emulator-5554 shell pidof rperfnatived");
    let record = at(&format!("adb -s emulator-5554 shell /data/local/tmp/rperf record -p {pid} -o /data/local/tmp/perf.data -g fp --duration 1"));
    assert!(found.is_some() && found < record, "{log}");
    let o = s.rperf(&["report", "-i", "perf.data", "--sort", "comm,symbol", "--symfs", "binary_cache"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("hot_loop"), "{}", stdout(&o));

    // Options that need an app.
    let o = s.rperf(&["android", "record", "--system-wide", "--launch", "--device-binary", &dev]);
    assert!(!o.status.success() && stderr(&o).contains("--app"), "{}", stderr(&o));

    std::fs::write(s.dir.join("adb.log"), "").unwrap();
    let o =
        s.rperf(&["android", "record", "--system-wide", "--device-binary", &dev, "--", "--duration", "0.5"]);
    assert!(o.status.success(), "{}\nadb calls:\n{}", stderr(&o), s.log());
    let log = s.log();
    assert!(
        log.contains("adb -s emulator-5554 shell /data/local/tmp/rperf record -a -o /data/local/tmp/perf.data --duration 0.5"),
        "{log}"
    );
    assert!(!log.contains("pm list packages"), "{log}");
    let o = s.rperf(&["report", "-i", "perf.data", "--sort", "comm", "-n"]);
    assert!(o.status.success() && stdout(&o).contains("Samples: "), "{}", stderr(&o));
}

#[test]
fn unstripped_libraries_from_build_folders_replace_the_devices_stripped_ones() {
    let s = sandbox("android_lib", &["emulator-5554"]);
    let dev = device_binary();
    // The developer's build folder holds the unstripped binary; the device has it stripped.
    let build = s.dir.join("build/intermediates/cmake/x86_64");
    std::fs::create_dir_all(&build).unwrap();
    copy_executable(&s.app_binary, &build.join("libhello"));
    let o = run(std::process::Command::new("strip").arg("--strip-all").arg(&s.app_binary));
    assert!(o.status.success(), "{}", stderr(&o));
    let args = ["android", "record", "--app", PKG, "--launch", "-lib", "build", "--device-binary", &dev];
    let o = s.rperf(&[&args[..], &["--", "-g", "fp", "--duration", "10"]].concat());
    assert!(o.status.success(), "{}\nadb calls:\n{}", stderr(&o), s.log());
    assert!(stderr(&o).contains("1 binaries taken from the build folders (-lib)"), "{}", stderr(&o));
    let log = s.log();
    assert!(!log.contains(&format!("pull {}", s.app_binary.display())), "pulled from the device:\n{log}");
    let cached = s.dir.join("binary_cache").join(s.app_binary.display().to_string().trim_start_matches('/'));
    assert_eq!(std::fs::read(&cached).unwrap(), std::fs::read(build.join("libhello")).unwrap());
    let o = s.rperf(&["report", "-i", "perf.data", "--sort", "symbol", "--symfs", "binary_cache"]);
    assert!(o.status.success() && stdout(&o).contains("hot_loop"), "{}", stdout(&o));
}

/// `--symdir DIR` finds binaries by build id anywhere under DIR, as deep as a build folder
/// keeps them; without it the stripped binary at the recorded path names nothing.
#[test]
fn symbol_folders_are_searched_recursively_by_build_id() {
    let s = sandbox("android_symdir", &["emulator-5554"]);
    let deep = s.dir.join("app/build/intermediates/cxx/RelWithDebInfo/4x3a/obj/x86_64");
    std::fs::create_dir_all(&deep).unwrap();
    copy_executable(&s.app_binary, &deep.join("libhello"));
    let o = run(std::process::Command::new("strip").arg("--strip-all").arg(&s.app_binary));
    assert!(o.status.success(), "{}", stderr(&o));
    let data = record_fp("android_symdir_rec", &s.app_binary, &["0.5", "1"]);
    let share = |extra: &[&str]| s.share(data.to_str().unwrap(), "hot_loop", extra);
    assert_eq!(share(&[]), 0.0, "named from the stripped binary");
    assert!(share(&["--symdir", "app"]) > 50.0);
    let o = s.rperf(&["report", "-i", data.to_str().unwrap(), "--symdir", "no/such/dir"]);
    assert!(
        !o.status.success() && stderr(&o).contains("--symdir no/such/dir: no such folder"),
        "{}",
        stderr(&o)
    );
}
