//! The Firefox Profiler's processed format (built by fxprof-processed-profile): one process per
//! recorded process, one thread per recorded thread, every sample with its time and its
//! symbolized stack. Open the file at https://profiler.firefox.com ("Load a profile from file").

use std::collections::HashMap;
use std::io::{self, Write};
use std::time::{Duration, SystemTime};

use fxprof_processed_profile::{
    CategoryColor, CpuDelta, Frame, FrameFlags, FrameInfo, Profile as Gecko, ReferenceTimestamp,
    SamplingInterval, Timestamp,
};

use crate::model::DsoKind;
use crate::options::ReportOptions;
use crate::run::Profile;

/// Writes the profile as JSON.
pub fn write(out: &mut dyn Write, p: &Profile, opts: &ReportOptions) -> io::Result<()> {
    let names = p.names();
    let (first, last) = p.time_range;
    let ended = std::fs::metadata(&opts.input).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH);
    let started = ended.checked_sub(Duration::from_nanos(last.saturating_sub(first))).unwrap_or(ended);
    let event = p.main_event();
    let interval =
        event.filter(|e| e.agg.samples > 0).map_or(1_000_000, |e| (e.agg.period / e.agg.samples).max(1));
    let mut g = Gecko::new(
        p.header.cmdline.as_deref().unwrap_or("rperf"),
        ReferenceTimestamp::from_system_time(started),
        SamplingInterval::from_nanos(interval),
    );
    g.set_symbolicated(true);
    let user = g.add_category("User", CategoryColor::Yellow);
    let kernel = g.add_category("Kernel", CategoryColor::Orange);
    let at = |t: u64| Timestamp::from_nanos_since_reference(t.saturating_sub(first));
    let mut processes = HashMap::new();
    let mut threads = HashMap::new();
    let mut frames_of: HashMap<u32, Vec<FrameInfo>> = HashMap::new();
    for e in &p.events {
        for row in &e.rows {
            let process = *processes.entry(row.pid).or_insert_with(|| {
                let name = names.comm(row.comm).to_string();
                g.add_process(&name, row.pid as u32, at(row.time))
            });
            let thread = *threads.entry(row.tid).or_insert_with(|| {
                let t = g.add_thread(process, row.tid as u32, at(row.time), row.tid == row.pid);
                g.set_thread_name(t, names.comm(row.comm));
                t
            });
            let frames = frames_of.entry(row.stack).or_insert_with(|| {
                // Root first, leaf last.
                let mut v = Vec::new();
                for &a in p.sample_stacks[row.stack as usize].iter().rev() {
                    for &f in p.symbolized.funcs(a).iter().rev() {
                        let func = &p.resolver.funcs[f as usize];
                        let category = match p.model.dsos[func.dso as usize].kind {
                            DsoKind::Kernel => kernel,
                            _ => user,
                        };
                        let label = g.intern_string(&names.func_name(f));
                        v.push(FrameInfo {
                            frame: Frame::Label(label),
                            category_pair: category.into(),
                            flags: FrameFlags::empty(),
                        });
                    }
                }
                v
            });
            let stack = g.intern_stack_frames(thread, frames.iter().cloned());
            let cpu =
                if e.name.ends_with("-clock") { CpuDelta::from_nanos(row.period) } else { CpuDelta::ZERO };
            g.add_sample(thread, at(row.time), stack, cpu, 1);
        }
    }
    serde_json::to_writer(out, &g).map_err(io::Error::other)
}
