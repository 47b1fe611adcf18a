//! Targets that come and go: children that fork and exec, thousands of short threads, targets
//! that exit mid-recording, and signals sent to rperf while it records.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// One row of `rperf report --sort pid,tid,comm,dso,symbol -n --csv`.
#[derive(Debug)]
struct Row {
    samples: u64,
    pid: i32,
    tid: i32,
    comm: String,
    dso: String,
    symbol: String,
}

fn rows(data: &Path) -> Vec<Row> {
    let o = run(rperf().args(["report", "--sort", "pid,tid,comm,dso,symbol", "-n", "--csv", "-i"]).arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    csv_rows(&stdout(&o), ',')
        .into_iter()
        .map(|r| Row {
            samples: r["Sample"].parse().unwrap(),
            pid: r["Pid"].parse().unwrap(),
            tid: r["Tid"].parse().unwrap(),
            comm: r["Command"].clone(),
            dso: r["Shared Object"].clone(),
            symbol: r["Symbol"].clone(),
        })
        .collect()
}

fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[test]
fn children_that_fork_and_exec_are_attributed_after_exec() {
    let p = programs();
    let dir = scratch("life_fork");
    let data = dir.join("fork.data");
    let children = 300;
    let o = run(rperf()
        .args(["record", "-F", "4000", "-g", "fp", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&p.spawner)
        .args(["fork", &children.to_string()])
        .arg(&p.workload_fp)
        .args(["0", "1", "0", "3"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = rows(&data);
    let parent: HashSet<i32> = rows.iter().filter(|r| r.symbol == "parent_spin").map(|r| r.pid).collect();
    assert_eq!(parent.len(), 1, "parent_spin runs in the parent only: {parent:?}");
    let parent = *parent.iter().next().unwrap();
    let mut child_pids = HashSet::new();
    let (mut hot, mut unknown, mut workload_samples) = (0, 0, 0);
    for r in &rows {
        if r.symbol == "hot_loop" || r.symbol == "compute_inner" {
            // The exec'd program's code: its comm, its own pid, its binary.
            assert_eq!(r.comm, "workload_fp", "{r:?}");
            assert_ne!(r.pid, parent, "{r:?}");
            assert_eq!(base(&r.dso), "workload_fp", "{r:?}");
            hot += r.samples;
        }
        if r.comm == "workload_fp" {
            // After exec nothing of the parent's binary is mapped.
            assert_ne!(base(&r.dso), "spawner", "{r:?}");
            assert_eq!(r.pid, r.tid, "{r:?}");
            child_pids.insert(r.pid);
            workload_samples += r.samples;
            if r.dso == "[unknown]" {
                unknown += r.samples;
            }
        }
        if r.symbol == "parent_spin" {
            assert_eq!((r.comm.as_str(), base(&r.dso)), ("spawner", "spawner"), "{r:?}");
        }
    }
    assert!(hot > 500, "only {hot} samples in the children's hot code");
    assert!(child_pids.len() >= children / 2, "{} of {children} children have samples", child_pids.len());
    assert!(unknown * 100 <= workload_samples, "{unknown} of {workload_samples} child samples in [unknown]");
}

#[test]
fn thousands_of_threads_keep_their_tids_and_names() {
    let p = programs();
    let dir = scratch("life_threads");
    let data = dir.join("threads.data");
    let threads = 3000;
    let o = run(rperf()
        .args(["record", "-F", "4000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&p.spawner)
        .args(["threads", &threads.to_string()]));
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = rows(&data);
    let mut tids = HashSet::new();
    let mut pids = HashSet::new();
    let mut per_tid: HashMap<i32, u64> = HashMap::new();
    for r in rows.iter().filter(|r| r.symbol == "thread_spin") {
        assert_eq!(r.comm, "worker", "{r:?}");
        assert_ne!(r.pid, r.tid, "{r:?}");
        tids.insert(r.tid);
        pids.insert(r.pid);
        *per_tid.entry(r.tid).or_default() += r.samples;
    }
    assert_eq!(pids.len(), 1, "all workers belong to one process: {pids:?}");
    assert!(tids.len() >= threads * 2 / 3, "{} of {threads} threads have samples", tids.len());
    // A thread spins ~1 ms: a handful of samples each, never a pile-up on a reused tid.
    let most = per_tid.values().max().copied().unwrap_or(0);
    assert!(most <= 40, "one tid has {most} samples");
}

#[test]
fn attached_target_exiting_ends_the_recording() {
    let p = programs();
    let dir = scratch("life_exit");
    let data = dir.join("exit.data");
    // Reaped by `cpu_seconds_at_exit` (wait4), which gives its CPU time as std's wait cannot.
    #[allow(clippy::zombie_processes)]
    let target = std::process::Command::new(&p.workload).args(["1", "2"]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let start = Instant::now();
    let o = run(rperf().args(["record", "-p", &target.id().to_string(), "-o"]).arg(&data));
    let cpu = cpu_seconds_at_exit(target.id());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(start.elapsed() < Duration::from_secs(3), "rperf went on after its target exited");
    // A sample per 0.25 ms of the target's CPU time (4000 Hz), but for the first 0.1 s it ran
    // unwatched: on a busy machine it gets less CPU time, and so fewer samples.
    let hot: u64 = rows(&data).iter().filter(|r| r.symbol == "hot_loop").map(|r| r.samples).sum();
    let expected = (cpu - 0.2).max(0.0) * 4000.0;
    assert!(hot as f64 >= 0.4 * expected && hot > 50, "{hot} samples in hot_loop, {cpu:.3} s of CPU time");
}

/// Waits for child `pid` and returns the CPU time it used (user and system, all its threads).
fn cpu_seconds_at_exit(pid: u32) -> f64 {
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is a child of this process, not yet waited for; the pointers are to locals.
    let r = unsafe { libc::wait4(pid as i32, &mut status, 0, &mut usage) };
    assert_eq!(r, pid as i32, "wait4: {}", std::io::Error::last_os_error());
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

/// Starts `rperf record -- workload 10 1` in its own process group, lets it run, and sends
/// `sig` to rperf alone (as `kill` does) or to the whole group (as a terminal does).
fn record_and_signal(name: &str, sig: i32, to_group: bool) -> (std::process::Output, std::path::PathBuf) {
    use std::os::unix::process::CommandExt;
    let dir = scratch(name);
    let data = dir.join("sig.data");
    let mut rec = rperf();
    rec.arg("record")
        .arg("-o")
        .arg(&data)
        .arg("--")
        .arg(&programs().workload)
        .args(["10", "1"])
        .stderr(Stdio::piped())
        .process_group(0);
    // As from a terminal's shell: SIGHUP not ignored (under nohup rperf keeps ignoring it).
    // SAFETY: only signal(), async-signal-safe, between fork and exec.
    unsafe {
        rec.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            Ok(())
        })
    };
    let rec = rec.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let target = if to_group { -(rec.id() as i32) } else { rec.id() as i32 };
    // SAFETY: signalling our own child (or its process group).
    unsafe { libc::kill(target, sig) };
    let start = Instant::now();
    let o = rec.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(5), "rperf took {:?} to stop", start.elapsed());
    (o, data)
}

#[test]
fn sigterm_and_sighup_give_a_complete_file_and_reach_the_command() {
    for (sig, name) in [(libc::SIGTERM, "term"), (libc::SIGHUP, "hup"), (libc::SIGINT, "int")] {
        for to_group in [false, true] {
            let (o, data) = record_and_signal(&format!("life_sig_{name}_{to_group}"), sig, to_group);
            let err = stderr(&o);
            assert!(err.contains("Samples recorded:"), "{name}: {err}");
            // The command died of the signal, once, exactly as without rperf.
            assert_eq!(o.status.code(), Some(128 + sig), "{name} (group {to_group}): {err}");
            // Every sample rperf counted is in the file (how many there are depends on how busy
            // the machine is: about 3,000 at 4 kHz on an idle one).
            let recorded: usize = err
                .lines()
                .find_map(|l| l.strip_prefix("Samples recorded: "))
                .and_then(|r| r.split('.').next()?.parse().ok())
                .unwrap_or_else(|| panic!("{name}: {err}"));
            let samples = parse_script(&perf_script(&data)).len();
            assert!(
                recorded > 50 && samples * 100 >= recorded * 99,
                "{name}: {samples} of {recorded} samples in the file"
            );
        }
    }
}

/// Started with SIGHUP ignored (`nohup`, as `rperf android record --no-usb` starts it on a
/// phone whose cable is then pulled), rperf keeps recording through a SIGHUP; SIGINT stops it.
#[test]
fn an_ignored_sighup_stays_ignored() {
    use std::os::unix::process::CommandExt;
    let dir = scratch("life_nohup");
    let data = dir.join("nohup.data");
    let mut rec = rperf();
    rec.arg("record").arg("-o").arg(&data).arg("-a").arg("--duration").arg("30").stderr(Stdio::piped());
    // SAFETY: only signal(), async-signal-safe, between fork and exec.
    unsafe {
        rec.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        })
    };
    let mut rec = rec.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(rec.id() as i32, libc::SIGHUP) };
    std::thread::sleep(Duration::from_millis(500));
    assert!(rec.try_wait().unwrap().is_none(), "SIGHUP stopped rperf though it was ignored");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    let o = rec.wait_with_output().unwrap();
    assert!(o.status.success() && stderr(&o).contains("Samples recorded:"), "{}", stderr(&o));
}

/// A process that begins and ends without a sample leaves no records (its FORK, COMM, MMAP
/// and EXIT; `--all-task-events` keeps them), but one whose child lives on keeps its own: the
/// child, which execs nothing, finds its mappings through them, in every reader.
#[test]
fn processes_without_samples_leave_no_records_but_forebears_of_sampled_ones_stay() {
    let p = programs();
    let dir = scratch("life_short");
    for all in [false, true] {
        let data = dir.join(format!("short_{all}.data"));
        // The quick child and the parent live about 0.1 ms: at 100 Hz they are seldom sampled.
        // The quick child's records stay when a pass over the rings begins within 20 ms of its
        // exit, as seldom. Either way the recording is made again.
        let mut tries = 0;
        let (quick, parent, child, rows, tasks) = loop {
            let mut cmd = rperf();
            cmd.args(["record", "-F", "100", "-o"]).arg(&data);
            if all {
                cmd.arg("--all-task-events");
            }
            let o = run(cmd.arg("--").arg(&p.spawner).args(["orphan", "0.6"]));
            assert!(o.status.success(), "{}", stderr(&o));
            let out = stdout(&o);
            let pid_of = |key: &str| -> i32 {
                out.lines()
                    .find_map(|l| l.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
                    .unwrap_or_else(|| panic!("no {key}= in {out}"))
            };
            let (quick, parent, child) = (pid_of("quick"), pid_of("parent"), pid_of("child"));
            let rows = rows(&data);
            // The task records perf sees.
            let o = run(Command::new("perf")
                .args(["script", "--show-task-events", "-F", "pid,event", "-i"])
                .arg(&data));
            let tasks = stdout(&o);
            tries += 1;
            let unsampled = !rows.iter().any(|r| r.pid == quick || r.pid == parent);
            let as_asked = unsampled && (task_records(&tasks, quick) > 0) == all;
            if as_asked || tries == 3 {
                break (quick, parent, child, rows, tasks);
            }
        };
        assert!(!rows.iter().any(|r| r.pid == quick), "the quick child was sampled in {tries} recordings");
        let quicks = task_records(&tasks, quick);
        assert_eq!(quicks > 0, all, "the quick child's records (--all-task-events {all}): {tasks}");
        // The parent's stay: its child lives on.
        assert!(!rows.iter().any(|r| r.pid == parent), "the parent was sampled: nothing to check");
        assert!(task_records(&tasks, parent) >= 2, "the parent's FORK and EXIT: {tasks}");
        // The grandchild's samples are in its code, with its comm, as perf and simpleperf see them too.
        let spun: u64 =
            rows.iter().filter(|r| r.pid == child && r.symbol == "orphan_spin").map(|r| r.samples).sum();
        let all_child: u64 = rows.iter().filter(|r| r.pid == child).map(|r| r.samples).sum();
        assert!(
            spun >= 5 && spun * 10 >= all_child * 8,
            "{spun} of {all_child} samples in orphan_spin: {rows:?}"
        );
        assert!(rows.iter().filter(|r| r.pid == child).all(|r| r.comm == "spawner"), "{rows:?}");
        let o = run(Command::new("perf").args(["report", "--stdio", "--sort", "pid,sym", "-i"]).arg(&data));
        let perfs = stdout(&o);
        assert!(perfs.contains(&format!("{child}:spawner  [.] orphan_spin")), "{perfs}");
        let o = run(Command::new(simpleperf()).args(["report", "--sort", "pid,symbol", "-i"]).arg(&data));
        let theirs = stdout(&o);
        assert!(
            theirs.lines().any(|l| l.contains(&format!(" {child} ")) && l.ends_with("orphan_spin")),
            "{theirs}"
        );
        // The recording says how many processes it left out.
        let o = run(rperf().args(["dump", "-i"]).arg(&data));
        let left_out: Option<u64> =
            stdout(&o).lines().find_map(|l| l.trim().strip_prefix("processes_left_out=")?.parse().ok());
        assert_eq!(left_out.is_some_and(|n| n >= 1), !all, "{}", stdout(&o));
        assert_eq!(left_out.is_none(), all);
    }
}

/// How many task records (`PERF_RECORD_*` lines) of process `pid` `perf script
/// --show-task-events -F pid,event` printed.
fn task_records(script: &str, pid: i32) -> usize {
    let pid = pid.to_string();
    script.lines().filter(|l| l.contains("PERF_RECORD_") && l.split_whitespace().next() == Some(&pid)).count()
}
