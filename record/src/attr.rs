//! The perf_event_attr of each event, from the plan of a recording, and what this machine
//! allows (sample rate, supported events).

use crate::event::EventSpec;
use crate::options::{CallGraph, Rate, RecordOptions, DEFAULT_FREQUENCY};
use crate::sys::{self, perf_event_attr, sample};
use crate::target::Target;

pub(crate) fn regs_count() -> usize {
    sys::USER_REGS_MASK.count_ones() as usize
}

pub(crate) fn max_sample_rate() -> u64 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100_000)
}

/// True when this machine can count `spec` (probed by opening it on rperf itself).
pub fn event_supported(spec: &EventSpec) -> Result<(), std::io::Error> {
    // SAFETY: all-zero is a valid perf_event_attr.
    let mut attr: perf_event_attr = unsafe { std::mem::zeroed() };
    attr.type_ = spec.type_;
    attr.size = std::mem::size_of::<perf_event_attr>() as u32;
    attr.config = spec.config;
    attr.set_disabled(1);
    attr.set_exclude_kernel(1);
    attr.set_exclude_hv(1);
    sys::perf_event_open(&mut attr, 0, -1, -1).map(drop)
}

pub(crate) fn data_pages(opts: &RecordOptions) -> usize {
    if let Some(p) = opts.mmap_pages {
        return p.max(1).next_power_of_two();
    }
    let page = sys::page_size();
    let bytes = match opts.call_graph {
        CallGraph::Dwarf { stack_size } => (128 * (stack_size as usize + 1024)).max(1 << 20),
        _ => 512 << 10,
    };
    (bytes / page).max(1).next_power_of_two()
}

/// The bytes a sample ring holds when the kernel wakes the recorder: a quarter of it.
pub(crate) fn sample_watermark(data_pages: usize) -> usize {
    data_pages * sys::page_size() / 4
}

pub(crate) fn make_attr(
    spec: &EventSpec,
    rate: Option<Rate>,
    opts: &RecordOptions,
    tracking: bool,
    sample_type: u64,
    data_pages: usize,
    enable_on_exec: bool,
) -> perf_event_attr {
    // SAFETY: all-zero is a valid perf_event_attr; every field we need is set below.
    let mut a: perf_event_attr = unsafe { std::mem::zeroed() };
    a.type_ = spec.type_;
    a.size = std::mem::size_of::<perf_event_attr>() as u32;
    a.config = spec.config;
    // Tracepoints sample every occurrence unless a period is given; -F applies to the others.
    let rate = match (rate, spec.is_tracepoint()) {
        (Some(Rate::Period(p)), _) => Rate::Period(p),
        (_, true) => Rate::Period(1),
        (Some(r), false) => r,
        (None, false) => Rate::Frequency(DEFAULT_FREQUENCY),
    };
    match rate {
        Rate::Frequency(f) => {
            a.set_freq(1);
            a.__bindgen_anon_1.sample_freq = f;
        }
        Rate::Period(p) => a.__bindgen_anon_1.sample_period = p,
    }
    a.sample_type = sample_type | if spec.is_tracepoint() { sample::RAW } else { 0 };
    a.set_disabled(1);
    a.set_inherit(u64::from(opts.inherit && !matches!(opts.target, Target::Threads(_))));
    a.set_exclude_kernel(u64::from(spec.exclude_kernel));
    a.set_exclude_user(u64::from(spec.exclude_user));
    a.set_exclude_hv(1);
    a.set_enable_on_exec(u64::from(enable_on_exec));
    if tracking {
        a.set_mmap(1);
        a.set_comm(1);
        a.set_task(1);
        a.set_mmap2(1);
        a.set_comm_exec(1);
        a.set_build_id(1);
        // Off-CPU time ends when the thread is switched back in.
        a.set_context_switch(u64::from(opts.trace_offcpu));
    }
    a.set_sample_id_all(1);
    // CLOCK_MONOTONIC unless `--clockid` says otherwise: the clock runtimes stamp their JIT
    // code with (ART), and the one the JIT interface's reads are timed with.
    a.set_use_clockid(1);
    a.clockid = opts.clockid;
    a.set_watermark(1);
    a.__bindgen_anon_2.wakeup_watermark = sample_watermark(data_pages) as u32;
    if let CallGraph::Dwarf { stack_size } = opts.call_graph {
        a.set_exclude_callchain_user(1);
        a.sample_regs_user = sys::USER_REGS_MASK;
        // DWARF unwinders read .eh_frame_hdr through the file's read-only segment mapping.
        if tracking {
            a.set_mmap_data(1);
        }
        a.sample_stack_user = stack_size;
    }
    a
}
