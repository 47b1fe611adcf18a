//! `rperf list`: every event name rperf accepts, grouped, each marked with whether this machine
//! supports it (probed by opening it).

use std::io::Write;

use clap::Args;
use rperf_record::event::{cache_events, tracefs_root, tracepoints, EventKind, NAMED_EVENTS};
use rperf_record::{event_supported, parse_event};

/// List the events rperf accepts and whether this machine supports them.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// Only this group: hw, sw, cache, tracepoint, raw or pmu.
    #[arg(value_name = "GROUP")]
    group: Option<String>,
    /// With `tracepoint`: only `system:name id` lines, the file `record --tracepoint-events`
    /// reads where tracefs cannot be (an app's user on Android).
    #[arg(long = "ids")]
    ids: bool,
}

fn mark(name: &str) -> &'static str {
    match parse_event(name) {
        Ok(spec) if event_supported(&spec).is_ok() => "",
        _ => "  # not supported on this machine",
    }
}

/// Runs `rperf list`.
pub fn run(a: ListArgs) -> anyhow::Result<i32> {
    let groups = ["hw", "sw", "cache", "tracepoint", "raw", "pmu"];
    let only = a.group.as_deref();
    if let Some(g) = only {
        if !groups.contains(&g) {
            anyhow::bail!("unknown group '{g}': use one of {}", groups.join(", "));
        }
    }
    let want = |g: &str| only.is_none_or(|o| o == g);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if a.ids {
        if only != Some("tracepoint") {
            anyhow::bail!("--ids lists tracepoints: rperf list tracepoint --ids");
        }
        let ids = rperf_record::event::tracepoint_ids();
        if ids.is_empty() {
            anyhow::bail!(
                "no tracepoint ids found: tracefs is not mounted or not readable here (run as root)"
            );
        }
        for (name, id) in ids {
            writeln!(out, "{name} {id}")?;
        }
        out.flush()?;
        return Ok(0);
    }
    if want("hw") {
        writeln!(out, "List of hardware events:")?;
        for e in NAMED_EVENTS.iter().filter(|e| e.kind == EventKind::Hardware) {
            writeln!(out, "  {}{}", e.name, mark(e.name))?;
        }
        writeln!(out)?;
    }
    if want("sw") {
        writeln!(out, "List of software events:")?;
        for e in NAMED_EVENTS.iter().filter(|e| e.kind == EventKind::Software) {
            writeln!(out, "  {}{}", e.name, mark(e.name))?;
        }
        writeln!(out)?;
    }
    if want("cache") {
        writeln!(out, "List of hw-cache events:")?;
        for (name, _) in cache_events() {
            writeln!(out, "  {name}{}", mark(&name))?;
        }
        writeln!(out)?;
    }
    if want("tracepoint") {
        writeln!(out, "List of tracepoint events:")?;
        match tracefs_root() {
            // Every listed tracepoint has an id in tracefs; opening thousands to probe them
            // would take seconds, so they are listed as available.
            Some(_) => {
                for tp in tracepoints() {
                    writeln!(out, "  {tp}")?;
                }
            }
            None => writeln!(out, "  # tracefs is not mounted: mount -t tracefs nodev /sys/kernel/tracing")?,
        }
        writeln!(out)?;
    }
    if want("raw") {
        writeln!(out, "List of raw events:")?;
        writeln!(out, "  rNNNN  (a hex PMU event code, e.g. r00c0){}", mark("r00c0"))?;
        writeln!(out)?;
    }
    if want("pmu") {
        writeln!(out, "List of PMU events:")?;
        for (pmu, event) in pmu_events() {
            writeln!(out, "  {pmu}/{event}/")?;
        }
        writeln!(out)?;
    }
    out.flush()?;
    Ok(0)
}

/// Events the kernel's PMU drivers name in sysfs.
fn pmu_events() -> Vec<(String, String)> {
    let mut v = Vec::new();
    let Ok(devs) = std::fs::read_dir("/sys/bus/event_source/devices") else { return v };
    for d in devs.flatten() {
        let pmu = d.file_name().to_string_lossy().into_owned();
        if let Ok(evs) = std::fs::read_dir(d.path().join("events")) {
            for e in evs.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if !name.contains('.') {
                    v.push((pmu.clone(), name));
                }
            }
        }
    }
    v.sort();
    v
}
