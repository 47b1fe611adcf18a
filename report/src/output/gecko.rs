//! The Firefox Profiler's processed format (built by fxprof-processed-profile): one process per
//! recorded process, one thread per recorded thread, every sample of the main section with its
//! time and its symbolized stack (off-CPU time in a category of its own, weighed in
//! microseconds). Open the file at https://profiler.firefox.com ("Load a profile from file").

use std::collections::HashMap;
use std::io::{self, Write};
use std::time::{Duration, SystemTime};

use fxprof_processed_profile::{
    CategoryColor, CpuDelta, Frame, FrameFlags, FrameInfo, Profile as Gecko, ReferenceTimestamp,
    SamplingInterval, Timestamp,
};

use crate::model::DsoKind;
use crate::profile::Profile;

/// When the recording started: the duration of the recording before the file was written.
/// Sample times from a damaged file can put that before 1970, which the format cannot hold
/// (regression test: tests/hostile.rs, samples_far_apart_in_time).
fn started(p: &Profile) -> SystemTime {
    let (first, last) = p.info.time_range;
    let ended = p.info.written.unwrap_or(SystemTime::UNIX_EPOCH);
    ended
        .checked_sub(Duration::from_nanos(last.saturating_sub(first)))
        .filter(|t| *t >= SystemTime::UNIX_EPOCH)
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Whether a stack (root first) reaches a thread's entry: the functions that start the main
/// thread and other threads, in Android's libc (simpleperf's test) and in glibc.
fn complete(p: &Profile, stack: u32, off_cpu: bool) -> bool {
    const GLIBC: [&str; 5] = ["_start", "start_thread", "clone3", "__clone", "__libc_start_main"];
    p.frames(stack, off_cpu, true).any(|f| {
        let n = p.names.func(f).name.as_str();
        n.contains("__libc_init") || n.contains("__start_thread") || GLIBC.contains(&n)
    })
}

/// The rows of `s` kept when runs of at most `max_gap` consecutive samples of a thread with
/// broken stacks are left out (simpleperf's `--remove-gaps`); all of them when `max_gap` is 0.
fn kept_rows(p: &Profile, s: &crate::profile::Section, max_gap: usize) -> Vec<bool> {
    let mut keep = vec![true; s.rows.len()];
    if max_gap == 0 {
        return keep;
    }
    let mut by_thread: HashMap<i32, Vec<usize>> = HashMap::new();
    for (i, r) in s.rows.iter().enumerate() {
        by_thread.entry(r.thread.tid).or_default().push(i);
    }
    let mut ok: HashMap<(u32, bool), bool> = HashMap::new();
    for rows in by_thread.values() {
        let broken: Vec<bool> = rows
            .iter()
            .map(|&i| {
                let r = &s.rows[i];
                !*ok.entry((r.stack, r.off_cpu)).or_insert_with(|| complete(p, r.stack, r.off_cpu))
            })
            .collect();
        let mut i = 0;
        while i < rows.len() {
            let n = broken[i..].iter().take_while(|b| **b).count();
            if n > 0 && n <= max_gap {
                rows[i..i + n].iter().for_each(|&r| keep[r] = false);
            }
            i += n.max(1);
        }
    }
    keep
}

/// Writes the profile as JSON; `max_gap` as `--remove-gaps`.
pub fn write(out: &mut dyn Write, p: &Profile, max_gap: usize) -> io::Result<()> {
    let names = &p.names;
    let first = p.info.time_range.0;
    let started = started(p);
    let section = p.main_section();
    let interval = section.filter(|s| s.samples > 0).map_or(1_000_000, |s| (s.weight / s.samples).max(1));
    let mut g = Gecko::new(
        p.info.cmdline.as_deref().unwrap_or("rperf"),
        ReferenceTimestamp::from_system_time(started),
        SamplingInterval::from_nanos(interval),
    );
    g.set_symbolicated(true);
    let user = g.add_category("User", CategoryColor::Yellow);
    let kernel = g.add_category("Kernel", CategoryColor::Orange);
    let waiting = g.add_category("Off-CPU", CategoryColor::Blue);
    let jit = g.add_category("JIT", CategoryColor::Green);
    // Timestamps are relative to the first sample; one that lies before it (a damaged file) is
    // placed at the start rather than wrapped.
    let at = |t: u64| Timestamp::from_nanos_since_reference(t.saturating_sub(first));
    let mut processes = HashMap::new();
    let mut threads = HashMap::new();
    let mut frames_of: HashMap<(u32, bool), Vec<FrameInfo>> = HashMap::new();
    // In time-weighted sections (off-CPU), each thread's sample weights in milliseconds, in
    // the order its samples were added (time order): the crate takes integer weights only, so
    // they are written into its JSON below, as `tracing-ms` weights.
    let mut weights_ms: HashMap<i32, Vec<f64>> = HashMap::new();
    let timed = p.main_section().is_some_and(|s| s.time_in_ns());
    // One section, as in the other stack outputs: the Firefox Profiler weighs every sample of
    // a thread alike.
    if let Some(s) = p.main_section() {
        let cpu_time = rperf_perfdata::events::counts_cpu_time(&s.name) || s.time_in_ns();
        let keep = kept_rows(p, s, max_gap);
        for (row, _) in s.rows.iter().zip(&keep).filter(|(_, k)| **k) {
            let t = row.thread;
            let process = *processes
                .entry(t.pid)
                .or_insert_with(|| g.add_process(names.comm(t.comm), t.pid as u32, at(row.time)));
            let thread = *threads.entry(t.tid).or_insert_with(|| {
                let th = g.add_thread(process, t.tid as u32, at(row.time), t.tid == t.pid);
                g.set_thread_name(th, names.comm(t.comm));
                th
            });
            let frames = frames_of.entry((row.stack, row.off_cpu)).or_insert_with(|| {
                // Root first, leaf last.
                let funcs: Vec<u32> = p.frames(row.stack, row.off_cpu, true).collect();
                funcs
                    .iter()
                    .rev()
                    .map(|&f| {
                        let category = match names.dso_of(f).kind {
                            DsoKind::Kernel => kernel,
                            _ if Some(f) == p.off_cpu_marker => waiting,
                            k if k.is_jit() => jit,
                            _ => user,
                        };
                        FrameInfo {
                            frame: Frame::Label(g.intern_string(&names.func_name(f))),
                            category_pair: category.into(),
                            flags: FrameFlags::empty(),
                        }
                    })
                    .collect()
            });
            let stack = g.intern_stack_frames(thread, frames.iter().cloned());
            let cpu =
                if cpu_time && !row.off_cpu { CpuDelta::from_nanos(row.weight) } else { CpuDelta::ZERO };
            g.add_sample(thread, at(row.time), stack, cpu, 1);
            if timed {
                weights_ms.entry(t.tid).or_default().push(row.weight as f64 / 1e6);
            }
        }
    }
    match timed {
        true => write_time_weighted(out, &g, weights_ms),
        false => serde_json::to_writer(out, &g).map_err(io::Error::other),
    }
}

/// Writes the profile with each thread's samples weighing their time (`weights_ms`, by tid).
fn write_time_weighted(
    out: &mut dyn Write,
    g: &Gecko,
    mut weights_ms: HashMap<i32, Vec<f64>>,
) -> io::Result<()> {
    let mut json = serde_json::to_value(g).map_err(io::Error::other)?;
    for t in json["threads"].as_array_mut().into_iter().flatten() {
        let tid = t["tid"].as_str().and_then(|s| s.parse().ok()).or(t["tid"].as_i64().map(|n| n as i32));
        if let Some(w) = tid.and_then(|tid| weights_ms.remove(&tid)) {
            t["samples"]["weightType"] = "tracing-ms".into();
            t["samples"]["weight"] = w.into();
        }
    }
    serde_json::to_writer(out, &json).map_err(io::Error::other)
}
