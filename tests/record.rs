//! `rperf record` on real programs, checked with Linux perf reading the files it writes.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

const CHAIN: [&str; 4] = ["hot_loop", "compute_inner", "compute_outer", "run_worker"];

fn has_chain(frames: &[String]) -> bool {
    frames.windows(CHAIN.len()).any(|w| w.iter().zip(CHAIN).all(|(f, c)| f == c))
}

fn record_command(
    dir: &std::path::Path,
    name: &str,
    extra: &[&str],
    prog: &std::path::Path,
    args: &[&str],
) -> (std::process::Output, std::path::PathBuf) {
    let data = dir.join(name);
    let o = run(rperf().arg("record").args(extra).arg("-o").arg(&data).arg("--").arg(prog).args(args));
    assert!(o.status.success(), "rperf record failed: {}", stderr(&o));
    (o, data)
}

#[test]
fn command_without_call_graph_samples_at_the_requested_rate() {
    let p = programs();
    let dir = scratch("rec_plain");
    let (o, data) = record_command(&dir, "plain.data", &[], &p.workload, &["1", "2"]);
    let err = stderr(&o);
    let cpu: f64 = err
        .split("cpu_seconds=")
        .nth(1)
        .expect("workload reports its CPU time")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(err.contains("Samples recorded:"), "{err}");
    let samples = parse_script(&perf_script(&data));
    let expected = 4000.0 * cpu;
    let n = samples.len() as f64;
    assert!(
        n > 0.75 * expected && n < 1.1 * expected,
        "{n} samples for {cpu:.2}s of CPU (expected ~{expected:.0})"
    );
    let hot = samples.iter().filter(|s| s.frames.first().is_some_and(|f| f == "hot_loop")).count();
    assert!(hot as f64 > 0.8 * n, "hot_loop in {hot} of {n} samples");
    // Both threads, attributed to the workload's pid and comm.
    let pid = samples.iter().find(|s| s.comm == "workload").expect("comm workload").pid;
    let mut tids: Vec<i32> = samples.iter().filter(|s| s.pid == pid).map(|s| s.tid).collect();
    tids.sort();
    tids.dedup();
    assert_eq!(tids.len(), 2, "threads seen: {tids:?}");
    assert!(tids.contains(&pid));
    // The summary's count is what the file holds.
    let recorded: usize =
        err.split("Samples recorded: ").nth(1).unwrap().split('.').next().unwrap().parse().unwrap();
    assert_eq!(recorded, samples.len());
}

#[test]
fn frame_pointer_call_graph_shows_the_caller_chain() {
    let p = programs();
    let dir = scratch("rec_fp");
    let (_, data) = record_command(&dir, "fp.data", &["-g", "fp"], &p.workload_fp, &["0.5", "2"]);
    let samples = parse_script(&perf_script(&data));
    let with_chain = samples.iter().filter(|s| has_chain(&s.frames)).count();
    assert!(
        with_chain as f64 > 0.9 * samples.len() as f64,
        "{with_chain} of {} samples have the chain",
        samples.len()
    );
}

#[test]
fn dwarf_call_graph_is_unwound_by_perf() {
    let p = programs();
    let dir = scratch("rec_dwarf");
    let (_, data) = record_command(&dir, "dwarf.data", &["-g"], &p.workload, &["0.5", "2"]);
    let samples = parse_script(&perf_script(&data));
    let with_chain = samples.iter().filter(|s| has_chain(&s.frames)).count();
    assert!(
        with_chain as f64 > 0.9 * samples.len() as f64,
        "{with_chain} of {} samples have the chain",
        samples.len()
    );
    // Stacks reach the thread entry: main for the main thread, clone for the worker.
    let complete = samples
        .iter()
        .filter(|s| s.frames.iter().any(|f| f == "main" || f.starts_with("clone") || f == "start_thread"))
        .count();
    assert!(complete as f64 > 0.9 * samples.len() as f64, "{complete} of {} stacks complete", samples.len());
}

fn spawn_workload(prog: &std::path::Path, args: &[&str]) -> std::process::Child {
    Command::new(prog).args(args).stdout(Stdio::null()).spawn().unwrap()
}

/// CPU seconds a task has run (user and system), from `/proc/.../stat` (`task` is `PID` or
/// `PID/task/TID`).
fn cpu_seconds(task: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{task}/stat")).unwrap();
    // Fields after the parenthesized name: state is field 3, utime 14 and stime 15.
    let rest: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: f64 = rest[11].parse::<f64>().unwrap() + rest[12].parse::<f64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// Samples a task should have at least, for the CPU time it got from just before rperf started
/// to just after it ended, sampled at 4 kHz (a busy machine gives it less than it asks for).
/// The window also holds rperf's start and its writing of the file, while the task ran
/// unsampled: a third of 4 kHz.
fn expected_samples(cpu_before: f64, cpu_after: f64) -> f64 {
    4000.0 / 3.0 * (cpu_after - cpu_before - 0.02).max(0.0)
}

#[test]
fn attach_to_a_running_process_by_pid_and_by_name() {
    let p = programs();
    let dir = scratch("rec_pid");
    let mut child = spawn_workload(&p.workload_fp, &["2", "2"]);
    std::thread::sleep(Duration::from_millis(200));
    let data = dir.join("pid.data");
    let before = cpu_seconds(&child.id().to_string());
    let o = run(rperf()
        .args(["record", "-g", "fp", "--duration", "0.6", "-p"])
        .arg(child.id().to_string())
        .arg("-o")
        .arg(&data));
    let after = cpu_seconds(&child.id().to_string());
    assert!(o.status.success(), "{}", stderr(&o));
    let samples = parse_script(&perf_script(&data));
    let expected = expected_samples(before, after);
    assert!(samples.len() as f64 > expected, "{} samples, {expected:.0} expected", samples.len());
    assert!(samples.iter().all(|s| s.pid == child.id() as i32));
    let mut tids: Vec<i32> = samples.iter().map(|s| s.tid).collect();
    tids.sort();
    tids.dedup();
    assert_eq!(tids.len(), 2, "both threads are sampled: {tids:?}");
    // Code mapped before the recording began is attributed (synthesized mmaps).
    assert!(samples.iter().filter(|s| has_chain(&s.frames)).count() as f64 > 0.9 * samples.len() as f64);

    // The same process found by a name regex.
    let named = dir.join("rperfpidtest");
    copy_executable(&p.workload_fp, &named);
    let mut named_child = spawn_workload(&named, &["2", "1"]);
    std::thread::sleep(Duration::from_millis(200));
    let data2 = dir.join("name.data");
    let before = cpu_seconds(&named_child.id().to_string());
    let o = run(rperf().args(["record", "--duration", "0.5", "-p", "rperfpid.*", "-o"]).arg(&data2));
    let after = cpu_seconds(&named_child.id().to_string());
    assert!(o.status.success(), "{}", stderr(&o));
    let samples = parse_script(&perf_script(&data2));
    let expected = expected_samples(before, after);
    assert!(samples.len() as f64 > expected, "{} samples, {expected:.0} expected", samples.len());
    assert!(samples.iter().all(|s| s.pid == named_child.id() as i32), "only the named process");
    for c in [&mut child, &mut named_child] {
        c.kill().ok();
        c.wait().ok();
    }
}

#[test]
fn thread_target_records_only_that_thread() {
    let p = programs();
    let dir = scratch("rec_tid");
    let mut child = spawn_workload(&p.workload, &["2", "2"]);
    std::thread::sleep(Duration::from_millis(200));
    let pid = child.id() as i32;
    let tid = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .find(|t| *t != pid)
        .expect("a worker thread");
    let data = dir.join("tid.data");
    let task = format!("{pid}/task/{tid}");
    let before = cpu_seconds(&task);
    let o =
        run(rperf().args(["record", "--duration", "0.5", "-t"]).arg(tid.to_string()).arg("-o").arg(&data));
    let after = cpu_seconds(&task);
    assert!(o.status.success(), "{}", stderr(&o));
    let samples = parse_script(&perf_script(&data));
    let expected = expected_samples(before, after);
    assert!(samples.len() as f64 > expected, "{} samples, {expected:.0} expected", samples.len());
    assert!(samples.iter().all(|s| s.tid == tid), "only tid {tid}");
    child.kill().ok();
    child.wait().ok();
}

#[test]
fn app_target_waits_for_the_app_to_start() {
    let p = programs();
    let dir = scratch("rec_app");
    let app = dir.join("rperfdemoapp");
    copy_executable(&p.workload_fp, &app);
    let data = dir.join("app.data");
    let mut rec = rperf()
        .args(["record", "--app", "rperfdemoapp", "-g", "fp", "--duration", "2.5", "-o"])
        .arg(&data)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Start the app only once rperf says it is waiting for it.
    let mut err = std::io::BufReader::new(rec.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("waiting for app rperfdemoapp to start") {
        let mut line = String::new();
        assert!(std::io::BufRead::read_line(&mut err, &mut line).unwrap() > 0, "rperf ended early: {seen}");
        seen.push_str(&line);
    }
    // Android names an app's processes by their first argument.
    let mut child = {
        use std::os::unix::process::CommandExt;
        Command::new(&app)
            .arg0("rperfdemoapp")
            .args(["0.8", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut app_err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut app_err).unwrap();
    child.wait().unwrap();
    // The app's own CPU time (a busy machine gives it less than it asks for) sets how many
    // samples it should have.
    let cpu: f64 = app_err
        .split("cpu_seconds=")
        .nth(1)
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("workload reports its CPU time");
    std::io::Read::read_to_string(&mut err, &mut seen).unwrap();
    assert!(rec.wait().unwrap().success(), "{seen}");
    let samples = parse_script(&perf_script(&data));
    let app_samples: Vec<_> = samples.iter().filter(|s| s.pid == child.id() as i32).collect();
    assert!(
        app_samples.len() as f64 > 0.6 * 4000.0 * cpu,
        "{} samples of the app for {cpu:.2} s of CPU",
        app_samples.len()
    );
    assert!(app_samples.iter().all(|s| s.comm == "rperfdemoapp"));
    assert!(
        app_samples.iter().filter(|s| has_chain(&s.frames)).count() as f64 > 0.8 * app_samples.len() as f64
    );
}

#[test]
fn system_wide_sees_every_process() {
    let p = programs();
    let dir = scratch("rec_all");
    let mut child = spawn_workload(&p.workload, &["1.5", "1"]);
    std::thread::sleep(Duration::from_millis(200));
    let data = dir.join("all.data");
    let o = run(rperf().args(["record", "-a", "--duration", "0.6", "-o"]).arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    let samples = parse_script(&perf_script(&data));
    let mine = samples.iter().filter(|s| s.pid == child.id() as i32 && s.frames[0] == "hot_loop").count();
    // Other tests may share the two CPUs, so ask for a fraction of the 0.6 s at 4000 Hz.
    assert!(mine > 500, "{mine} samples of the workload's hot_loop");
    child.kill().ok();
    child.wait().ok();
}

#[test]
fn exit_code_is_the_commands() {
    let dir = scratch("rec_exit");
    let o = run(rperf().arg("record").arg("-o").arg(dir.join("a.data")).args(["--", "sh", "-c", "exit 3"]));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let o =
        run(rperf().arg("record").arg("-o").arg(dir.join("b.data")).args(["--", "sh", "-c", "kill -9 $$"]));
    assert_eq!(o.status.code(), Some(137), "{}", stderr(&o));
    perf_script(&dir.join("b.data"));
    let o = run(rperf().arg("record").arg("-o").arg(dir.join("c.data")).args(["--", "/no/such/program"]));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot run '/no/such/program': no such file"), "{}", stderr(&o));
    // The one thing said: not the event notes that would precede a recording.
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(!dir.join("c.data").exists(), "nothing is made for a command that cannot run");
    let o =
        run(rperf().arg("record").arg("-o").arg(dir.join("d.data")).args(["--", "no-such-program-in-path"]));
    assert!(stderr(&o).contains("cannot run 'no-such-program-in-path': not found in PATH"), "{}", stderr(&o));
}

#[test]
fn sigint_leaves_a_complete_file() {
    let p = programs();
    let dir = scratch("rec_sigint");
    let data = dir.join("int.data");
    let rec = rperf()
        .arg("record")
        .arg("-o")
        .arg(&data)
        .arg("--")
        .arg(&p.workload)
        .args(["10", "1"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    let start = std::time::Instant::now();
    let o = rec.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(stderr(&o).contains("Samples recorded:"), "{}", stderr(&o));
    // The command got the SIGINT too (exit 130) and the file is complete.
    assert_eq!(o.status.code(), Some(130));
    assert!(parse_script(&perf_script(&data)).len() > 500);
}

#[test]
fn bad_input_gets_a_clear_error() {
    let dir = scratch("rec_errors");
    let out = dir.join("x.data");
    let o = run(rperf().args(["record", "-e", "cpu-clcok", "-o"]).arg(&out).args(["--", "true"]));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("did you mean cpu-clock"), "{}", stderr(&o));
    let o = run(rperf().args(["record", "-p", "999999999", "-o"]).arg(&out));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no process with pid 999999999"), "{}", stderr(&o));
    let o = run(rperf().args(["record", "-o", "/no/such/dir/x.data", "--", "true"]));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    let o = run(rperf().args(["record", "-o"]).arg(&out));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("nothing to profile"), "{}", stderr(&o));
    let o = run(rperf().args(["record", "-e", "cycles", "-o"]).arg(&out).args(["--", "true"]));
    if has_pmu() {
        assert!(o.status.success(), "{}", stderr(&o));
    } else {
        assert!(!o.status.success());
        let e = stderr(&o);
        assert!(e.contains("not supported on this machine") && e.contains("cpu-clock"), "{e}");
        // Without -e, rperf falls back to cpu-clock and says so.
        let o = run(rperf().args(["record", "-o"]).arg(&out).args(["--", "true"]));
        assert!(o.status.success());
        assert!(stderr(&o).contains("sampling cpu-clock instead"), "{}", stderr(&o));
    }
}

#[test]
fn tracepoints_sample_every_event() {
    let data = scratch("rec_tp").join("tp.data");
    record_sched_switch(&data);
    let text = perf_script(&data);
    assert!(text.matches("sched:sched_switch").count() >= 5, "{text}");
}

#[test]
fn size_limit_stops_early_with_a_readable_file() {
    let p = programs();
    let dir = scratch("rec_size");
    let data = dir.join("s.data");
    let start = std::time::Instant::now();
    let o = run(rperf()
        // Samples with their stacks (several KiB each) reach the limit after a few dozen.
        .args(["record", "-g", "--no-post-unwind", "--size-limit", "300K", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&p.workload)
        .args(["5", "1"]));
    assert!(start.elapsed() < Duration::from_secs(4), "stopped at the size limit");
    assert!(std::fs::metadata(&data).unwrap().len() < 2 << 20);
    assert!(stderr(&o).contains("Samples recorded:"), "{}", stderr(&o));
    assert!(!parse_script(&perf_script(&data)).is_empty());
}

#[test]
fn disk_full_keeps_what_was_recorded() {
    let p = programs();
    let dir = scratch("rec_full");
    let mnt = dir.join("small");
    std::fs::create_dir_all(&mnt).unwrap();
    let m = run(Command::new("mount").args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"]).arg(&mnt));
    assert!(m.status.success(), "this test mounts a 1 MiB tmpfs and needs root: {}", stderr(&m));
    let data = mnt.join("full.data");
    // Samples keep their stacks (several KiB each), so that a busy machine's few samples
    // still fill the disk.
    let o = run(rperf()
        .args(["record", "-g", "--no-post-unwind", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&p.workload)
        .args(["3", "1"]));
    let err = stderr(&o);
    // Copy the file out before unmounting; perf needs some room to work.
    let kept = dir.join("kept.data");
    std::fs::copy(&data, &kept).unwrap();
    run(Command::new("umount").arg(&mnt));
    assert!(!o.status.success(), "a full disk is an error: {err}");
    assert!(err.contains("recording stopped early") && err.contains("disk is full"), "{err}");
    let recorded: usize =
        err.split("Samples recorded: ").nth(1).unwrap().split('.').next().unwrap().parse().unwrap();
    assert!(recorded > 0);
    let in_file = parse_script(&perf_script(&kept)).len();
    assert!(in_file > 0, "samples before the disk filled are readable");
    // The message counts the samples the file holds, not those taken.
    let said: usize = err.split("holds the ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert_eq!(said, in_file, "{err}");
}

#[test]
fn the_output_is_a_new_private_file_never_a_link_followed() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("rec_output_safety");
    // A link at the output path: the link is moved aside, its target never written.
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "keep me").unwrap();
    let out = dir.join("link.data");
    std::os::unix::fs::symlink(&victim, &out).unwrap();
    let o = run(rperf().args(["record", "-o"]).arg(&out).args(["--", "true"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    assert!(std::fs::symlink_metadata(dir.join("link.data.old")).unwrap().file_type().is_symlink());
    let meta = std::fs::symlink_metadata(&out).unwrap();
    assert!(meta.is_file());
    // Recordings hold stack memory: only their owner reads them.
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    // A dangling link is not followed either.
    let dangling = dir.join("dangling.data");
    std::os::unix::fs::symlink(dir.join("nowhere"), &dangling).unwrap();
    let o = run(rperf().args(["record", "-o"]).arg(&dangling).args(["--", "true"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!dir.join("nowhere").exists());
    // A recording that never starts leaves an existing one as it was, and nothing else.
    let existing = dir.join("existing.data");
    std::fs::copy(&out, &existing).unwrap();
    let before = std::fs::read(&existing).unwrap();
    let o = run(rperf().args(["record", "-o"]).arg(&existing).args(["--", "/nonexistent"]));
    assert!(!o.status.success());
    assert_eq!(std::fs::read(&existing).unwrap(), before);
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(!left.iter().any(|n| n.to_string_lossy().contains(".rperf-")), "{left:?}");
}

/// Device nodes and FIFOs as `-o` are written to, never moved aside or replaced: as root,
/// `-o /dev/null` once renamed the device node to `/dev/null.old`. Nodes are made in a scratch
/// folder (the same devices as /dev/null and /dev/full) so the test never touches /dev.
#[test]
fn device_nodes_and_fifos_as_output_are_written_to_never_moved() {
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("rec_output_devices");
    let node = |name: &str, kind: &str, major: &str, minor: &str| {
        let p = dir.join(name);
        let st = Command::new("mknod").arg(&p).args([kind, major, minor]).status().unwrap();
        assert!(st.success());
        p
    };
    let null = node("null", "c", "1", "3");
    let o = run(rperf().args(["record", "-o"]).arg(&null).args(["--", "true"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&null).unwrap().file_type().is_char_device());
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["null"], "nothing moved, nothing left beside it");
    // A full device: an error that says so, and the node stays.
    let full = node("full", "c", "1", "7");
    let o = run(rperf().args(["record", "-o"]).arg(&full).args(["--", "true"]));
    assert!(!o.status.success() && stderr(&o).contains("No space left"), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&full).unwrap().file_type().is_char_device());
    // A FIFO gets the whole recording, readable as any other.
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let got = dir.join("got.data");
    let reader =
        Command::new("sh").arg("-c").arg(format!("cat {} > {}", fifo.display(), got.display())).spawn();
    let mut reader = reader.unwrap();
    let o = run(rperf().args(["record", "-o"]).arg(&fifo).args([
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "count=200000",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(reader.wait().unwrap().success());
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(!parse_script(&perf_script(&got)).is_empty(), "perf reads what the FIFO carried");
    // Nodes rperf does not write recordings to are refused by name, and left in place; so is a
    // NAME.old that is not a regular file.
    let block = node("block", "b", "7", "200");
    let o = run(rperf().args(["record", "-o"]).arg(&block).args(["--", "true"]));
    assert!(!o.status.success() && stderr(&o).contains("block device"), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&block).unwrap().file_type().is_block_device());
    let out = dir.join("out.data");
    std::fs::write(&out, "old").unwrap();
    let old = node("out.data.old", "c", "1", "3");
    let o = run(rperf().args(["record", "-o"]).arg(&out).args(["--", "true"]));
    assert!(!o.status.success() && stderr(&o).contains("character device"), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&old).unwrap().file_type().is_char_device());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
    // A link to a device (as /dev/stdout is) is neither written through nor moved aside.
    let link = dir.join("stdout");
    std::os::unix::fs::symlink(&null, &link).unwrap();
    let o = run(rperf().args(["record", "-o"]).arg(&link).args(["--", "true"]));
    assert!(!o.status.success() && stderr(&o).contains("symbolic link to a device"), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(!dir.join("stdout.old").exists());
}
