//! The report pipeline: records in time order → process model → unwound stacks → functions →
//! aggregate → output.

use std::collections::HashMap;
use std::io::Write;

use linux_perf_data::linux_perf_event_reader::{CpuMode, EventRecord, Mmap2FileId};
use linux_perf_data::{Feature, PerfFileReader, PerfFileRecord};
use rperf_symbols::{BinaryFinder, KernelSymbols, SymbolTable};
use rperf_unwind::{split_callchain, Arch, ChainFrame, CodeAddress, Context, Regs};

use crate::aggregate::{AggregateConfig, EventAggregate, ResolvedSample};
use crate::flame::FoldStyle;
use crate::input::{event_name, raw_attrs};
use crate::model::Model;
use crate::options::ReportOptions;
use crate::resolve::{AddrId, KernelSource, Resolver};
use crate::text::{self, Header, Names, Section};
use crate::Error;

/// rperf's kallsyms snapshot section (see the recorder).
const RPERF_KALLSYMS: u32 = 192;
const RPERF_PERF_MAPS: u32 = 193;
const RPERF_JITDUMPS: u32 = 194;
/// rperf's copy of the vDSO image.
const RPERF_VDSO: u32 = 195;
const MAX_UNWIND_FRAMES: usize = 1024;

/// Distinct address-level stacks of each thread: (comm, pid, tid) → frames → (samples, period).
pub(crate) type ThreadStacks = HashMap<(u32, i32, i32), HashMap<Vec<AddrId>, (u64, u64)>>;

/// One sample, kept for per-sample outputs (gecko, json).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SampleRow {
    pub time: u64,
    pub pid: i32,
    pub tid: i32,
    pub cpu: u32,
    pub period: u64,
    pub comm: u32,
    /// Index into `Profile::sample_stacks`.
    pub stack: u32,
}

pub(crate) struct EventState {
    pub name: String,
    pub type_: u32,
    pub config: u64,
    /// Address stacks (kept after loading for pprof).
    pub stacks: ThreadStacks,
    /// Stacks of off-CPU time (off-CPU recordings), kept apart so stack outputs can mark them.
    off_stacks: ThreadStacks,
    pub agg: EventAggregate,
    pub lost: u64,
    pub truncated: u64,
    /// Event counts are nanoseconds of time (off-CPU recordings).
    pub time_in_ns: bool,
    /// Every sample, for per-sample outputs.
    pub rows: Vec<SampleRow>,
}

impl EventState {
    fn new(name: String, type_: u32, config: u64, time_in_ns: bool) -> EventState {
        EventState {
            name,
            type_,
            config,
            stacks: HashMap::new(),
            off_stacks: HashMap::new(),
            agg: EventAggregate::default(),
            lost: 0,
            truncated: 0,
            time_in_ns,
            rows: Vec::new(),
        }
    }
}

/// The data section's offset and size from the file header.
fn perf_file_data_section(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::io::Read;
    let mut head = [0u8; 56];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    let u = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().unwrap());
    Some((u(40), u(48)))
}

/// Folds one stack into a thread's distinct stacks.
fn add_stack(stacks: &mut ThreadStacks, key: (u32, i32, i32), frames: &[AddrId], samples: u64, period: u64) {
    let per_thread = stacks.entry(key).or_default();
    match per_thread.get_mut(frames) {
        Some(v) => {
            v.0 = v.0.saturating_add(samples);
            v.1 = v.1.saturating_add(period);
        }
        None => {
            per_thread.insert(frames.to_vec(), (samples, period));
        }
    }
}

/// Where samples of an off-CPU recording go: each sample of a thread is weighted by the time
/// until that thread's next sample, so a thread's lifetime is shared among its samples; a
/// switch-out sample's share is time spent off the CPU in the stack it blocked in.
struct TimeRouting {
    switch_attr: usize,
    on_attr: usize,
    on_is_time: bool,
    on_section: Option<usize>,
    off_section: Option<usize>,
}

/// The previous sample of a thread, waiting for its weight.
struct LastSample {
    time: u64,
    switch: bool,
    key: (u32, i32, i32),
    frames: Vec<AddrId>,
    period: u64,
}

/// Gives a thread's previous sample its weight: the time until `until`.
fn settle(events: &mut [EventState], tr: &TimeRouting, prev: LastSample, until: u64) {
    let section = if prev.switch { tr.off_section } else { tr.on_section };
    if let Some(sec) = section {
        let ev = &mut events[sec];
        let stacks = if prev.switch { &mut ev.off_stacks } else { &mut ev.stacks };
        add_stack(stacks, prev.key, &prev.frames, 1, until.saturating_sub(prev.time));
    }
}

fn time_routing(
    events: &mut Vec<EventState>,
    mode: Option<crate::OffCpuMode>,
) -> Result<Option<TimeRouting>, String> {
    use crate::OffCpuMode::*;
    let switch_attr = events.iter().position(|e| e.name == "sched:sched_switch");
    let on_attr = events.iter().position(|e| e.name != "sched:sched_switch");
    let (Some(switch_attr), Some(on_attr)) = (switch_attr, on_attr) else {
        return match mode {
            Some(_) => Err("--trace-offcpu needs a recording with sched:sched_switch and cpu-clock samples \
                 (record it with `rperf record --trace-offcpu`)"
                .into()),
            None => Ok(None),
        };
    };
    let mode = mode.unwrap_or(Mixed);
    let on = &events[on_attr];
    let on_is_time = matches!(on.name.as_str(), "cpu-clock" | "task-clock");
    let (on_name, on_type, on_config) = (on.name.clone(), on.type_, on.config);
    let mut sections = Vec::new();
    let mut on_section = None;
    let mut off_section = None;
    if matches!(mode, OnCpu | OnOffCpu) {
        on_section = Some(sections.len());
        sections.push(EventState::new(format!("{on_name} (on-cpu time)"), on_type, on_config, true));
    }
    if matches!(mode, OffCpu | OnOffCpu) {
        off_section = Some(sections.len());
        sections.push(EventState::new(
            "sched:sched_switch (off-cpu time)".into(),
            2,
            events[switch_attr].config,
            true,
        ));
    }
    if mode == Mixed {
        on_section = Some(0);
        off_section = Some(0);
        sections.push(EventState::new(
            format!("{on_name} + sched:sched_switch (on- and off-cpu time)"),
            on_type,
            on_config,
            true,
        ));
    }
    *events = sections;
    Ok(Some(TimeRouting { switch_attr, on_attr, on_is_time, on_section, off_section }))
}

/// Everything read from a recording, aggregated.
pub struct Profile {
    pub(crate) header: Header,
    pub(crate) events: Vec<EventState>,
    pub(crate) model: Model,
    pub(crate) resolver: Resolver,
    /// What each frame address was named.
    pub(crate) symbolized: crate::resolve::Symbolized,
    /// Distinct address stacks of the samples kept for per-sample outputs.
    pub(crate) sample_stacks: Vec<Vec<AddrId>>,
    /// Time of the first and last sample (perf clock, ns).
    pub(crate) time_range: (u64, u64),
    /// Non-fatal problems met while reading.
    pub warnings: Vec<String>,
}

/// Reads and aggregates a recording.
pub fn load(opts: &ReportOptions) -> Result<Profile, Error> {
    let path = &opts.input;
    std::fs::metadata(path).map_err(|e| Error::Open { path: path.clone(), source: e })?;
    let (reader, mut warnings) =
        crate::input::open_checked(path).map_err(|reason| Error::Format { path: path.clone(), reason })?;
    let file_len = std::fs::metadata(path).map_or(0, |m| m.len());
    let mut progress = crate::progress::Progress::new(file_len, reader.shared_pos.clone());
    let PerfFileReader { mut perf_file, mut record_iter } = PerfFileReader::parse_file(reader)
        .map_err(|e| Error::Format { path: path.clone(), reason: e.to_string() })?;
    let raw = raw_attrs(path);
    let mut events: Vec<EventState> = perf_file
        .event_attributes()
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let (type_, config) = raw.get(i).copied().unwrap_or((u32::MAX, 0));
            EventState::new(
                a.name().map(str::to_string).unwrap_or_else(|| event_name(type_, config)),
                type_,
                config,
                false,
            )
        })
        .collect();
    let timing = time_routing(&mut events, opts.trace_offcpu).map_err(Error::Usage)?;
    let mut last: HashMap<i32, LastSample> = HashMap::new();
    let mut end_time = 0u64;
    let arch_name = perf_file.arch().ok().flatten().map(str::to_string);
    let arch = arch_name.as_deref().and_then(Arch::from_name).unwrap_or(if cfg!(target_arch = "aarch64") {
        Arch::Aarch64
    } else {
        Arch::X86_64
    });
    let header =
        Header { cmdline: perf_file.cmdline().ok().flatten().map(|v| v.join(" ")), arch: arch_name.clone() };
    let stored = perf_file.simpleperf_symbol_tables().ok().flatten().unwrap_or_default();
    let kernel = kernel_symbols(opts, &perf_file, &stored)?;
    let build_ids: HashMap<String, Vec<u8>> = perf_file
        .build_ids()
        .map(|m| {
            m.into_values().map(|d| (String::from_utf8_lossy(&d.path).into_owned(), d.build_id)).collect()
        })
        .unwrap_or_default();
    let mut finder = BinaryFinder::new(opts.symfs.as_deref());
    if let Some(image) = perf_file.feature_section_data(Feature(RPERF_VDSO)) {
        finder.set_recorded_vdso(image.to_vec());
    }
    let mut resolver = Resolver::new(finder, kernel, stored, arch);
    resolver.dwarf_inline = opts.inline;
    if let Some(d) = perf_file.feature_section_data(Feature(RPERF_PERF_MAPS)) {
        resolver.embedded_perf_maps = embedded_perf_maps(d);
    }
    if let Some(d) = perf_file.feature_section_data(Feature(RPERF_JITDUMPS)) {
        resolver.embedded_jitdumps = embedded_jitdumps(d);
    }
    resolver.want_srclines = opts.sort.contains(&crate::SortKey::Srcline);
    resolver.want_lines = matches!(opts.format, crate::Format::Pprof | crate::Format::Json);
    let keep_rows = matches!(opts.format, crate::Format::Gecko | crate::Format::Json);
    let mut sample_stacks: Vec<Vec<AddrId>> = Vec::new();
    let mut sample_stack_index: HashMap<Vec<AddrId>, u32> = HashMap::new();
    let mut time_range = (u64::MAX, 0u64);
    let mut model = Model::default();
    let cfg = AggregateConfig::new(opts);
    let mut frames: Vec<AddrId> = Vec::new();
    let mut scratch = Scratch::default();
    let mut records = 0u64;
    let mut undecodable = 0u64;
    let mut patched: Vec<u8> = Vec::new();
    loop {
        if records & 0xfff == 1 {
            progress.tick();
        }
        let rec = match record_iter.next_record(&mut perf_file) {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                // Name the first malformed record when there is one to find.
                let data_off = perf_file_data_section(path);
                let reason = match data_off.map(|(off, size)| crate::input::walk_records(path, off, size)) {
                    Some((_, Some((_, why)))) => format!("{e}: {why}"),
                    _ => e.to_string(),
                };
                if records == 0 {
                    return Err(Error::Format { path: path.clone(), reason });
                }
                warnings.push(format!(
                    "{}: stopped reading after {records} records: {reason}; the report shows what was readable",
                    path.display()
                ));
                break;
            }
        };
        records += 1;
        let PerfFileRecord::EventRecord { attr_index, record } = rec else { continue };
        if !record_is_sane(&record) {
            undecodable += 1;
            continue;
        }
        let parsed = match record.parse() {
            Ok(p) => p,
            Err(_) => match reparse_read_group_sample(&record, &mut patched) {
                Some(s) => EventRecord::Sample(s),
                None => {
                    undecodable += 1;
                    continue;
                }
            },
        };
        match parsed {
            EventRecord::Sample(s) => {
                if timing.is_none() && attr_index >= events.len() {
                    continue;
                }
                let pid = s.pid.unwrap_or(-1);
                let tid = s.tid.unwrap_or(pid);
                let f = &opts.filters;
                if (!f.pids.is_empty() && !f.pids.contains(&pid))
                    || (!f.tids.is_empty() && !f.tids.contains(&tid))
                    || (!f.cpus.is_empty() && !s.cpu.is_some_and(|c| f.cpus.contains(&c)))
                {
                    continue;
                }
                let comm = model.comm_of(pid, tid);
                if !f.comms.is_empty() && !f.comms.iter().any(|c| *c == model.strings[comm as usize]) {
                    continue;
                }
                let truncated = stack_frames(
                    &s,
                    pid,
                    arch,
                    &mut model,
                    &mut resolver,
                    opts.max_stack,
                    &mut scratch,
                    &mut frames,
                );
                if frames.is_empty() {
                    continue;
                }
                let period = s.period.unwrap_or(1);
                let key = (comm, pid, tid);
                if let Some(t) = s.timestamp {
                    time_range = (time_range.0.min(t), time_range.1.max(t));
                }
                let Some(tr) = &timing else {
                    let ev = &mut events[attr_index];
                    ev.truncated += u64::from(truncated);
                    add_stack(&mut ev.stacks, key, &frames, 1, period);
                    if keep_rows {
                        let stack = match sample_stack_index.get(&frames) {
                            Some(&i) => i,
                            None => {
                                let i = sample_stacks.len() as u32;
                                sample_stacks.push(frames.clone());
                                sample_stack_index.insert(frames.clone(), i);
                                i
                            }
                        };
                        let time = s.timestamp.unwrap_or(0);
                        let cpu = s.cpu.unwrap_or(0);
                        ev.rows.push(SampleRow { time, pid, tid, cpu, period, comm, stack });
                    }
                    continue;
                };
                if attr_index != tr.switch_attr && attr_index != tr.on_attr {
                    continue;
                }
                let switch = attr_index == tr.switch_attr;
                if let Some(sec) = if switch { tr.off_section } else { tr.on_section } {
                    events[sec].truncated += u64::from(truncated);
                }
                let time = s.timestamp.unwrap_or(0);
                end_time = end_time.max(time);
                let this = LastSample { time, switch, key, frames: frames.clone(), period };
                if let Some(prev) = last.insert(tid, this) {
                    settle(&mut events, tr, prev, time);
                }
            }
            EventRecord::Comm(c) => {
                let name = String::from_utf8_lossy(&c.name.as_slice()).into_owned();
                model.comm(c.pid, c.tid, &name, c.is_execve);
            }
            EventRecord::Fork(f) => model.fork(f.pid, f.ppid, f.tid, f.ptid),
            EventRecord::Exit(f) => {
                // A thread's last sample lasts until it exits.
                if let (Some(tr), Some(prev)) = (&timing, last.remove(&f.tid)) {
                    end_time = end_time.max(f.timestamp);
                    settle(&mut events, tr, prev, f.timestamp);
                }
            }
            EventRecord::Mmap(m) => {
                let p = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                let bid = build_ids.get(&p).cloned();
                let kernel = matches!(m.cpu_mode, CpuMode::Kernel) || m.pid == -1;
                model.mmap(m.pid, (m.address, m.length, m.page_offset), &p, bid, m.is_executable, kernel);
            }
            EventRecord::Mmap2(m) => {
                let p = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                let bid = match &m.file_id {
                    Mmap2FileId::BuildId(b) => Some(b.clone()),
                    _ => build_ids.get(&p).cloned(),
                };
                let kernel = matches!(m.cpu_mode, CpuMode::Kernel) || m.pid == -1;
                model.mmap(
                    m.pid,
                    (m.address, m.length, m.page_offset),
                    &p,
                    bid,
                    m.protection & 4 != 0,
                    kernel,
                );
            }
            EventRecord::Lost(l) => {
                let i = if timing.is_some() { 0 } else { attr_index };
                if let Some(ev) = events.get_mut(i) {
                    ev.lost = ev.lost.saturating_add(l.count);
                }
            }
            _ => {}
        }
    }
    if undecodable > 0 {
        warnings.push(format!("{undecodable} records could not be decoded and were skipped"));
    }
    // Threads still alive at the end: a last switch-out lasts until the recording ends, a last
    // clock sample for its period.
    if let Some(tr) = &timing {
        for (_, l) in last {
            let end = if l.switch || !tr.on_is_time { end_time } else { l.time + l.period };
            settle(&mut events, tr, l, end);
        }
    }
    // Names for every distinct frame at once, then the distinct stacks folded in by function.
    progress.stage("symbolizing");
    let func_of = resolver.symbolize(&mut model);
    progress.finish();
    // Stack outputs mark off-CPU time with a frame of its own above the blocking stack.
    let marker = opts.format.uses_stacks().then(|| resolver.marker(&mut model, "[off-cpu]"));
    let mut funcs_buf = Vec::new();
    for ev in &mut events {
        // pprof reads the address stacks again; other outputs need only the aggregate.
        let on: Vec<_> = if opts.format == crate::Format::Pprof {
            ev.stacks.iter().map(|(k, v)| (false, (*k, v.clone()))).collect()
        } else {
            std::mem::take(&mut ev.stacks).into_iter().map(|s| (false, s)).collect()
        };
        let off = std::mem::take(&mut ev.off_stacks).into_iter().map(|s| (true, s));
        for (is_off, ((comm, pid, tid), stacks)) in on.into_iter().chain(off) {
            for (addrs, (samples, period)) in stacks {
                funcs_buf.clear();
                if let (true, Some(m)) = (is_off, marker) {
                    funcs_buf.push(m);
                }
                funcs_buf.extend(addrs.iter().flat_map(|a| func_of.funcs(*a)));
                if !leaf_matches(opts, &model, &resolver, funcs_buf[0]) {
                    continue;
                }
                let srcline = addrs.first().map_or(0, |a| func_of.srcline[*a as usize]);
                let sample = ResolvedSample { comm, pid, tid, period, samples, srcline, frames: &funcs_buf };
                ev.agg.add(&cfg, &sample, &resolver.funcs);
            }
        }
    }
    warnings.append(&mut resolver.warnings);
    if time_range.0 > time_range.1 {
        time_range = (0, 0);
    }
    Ok(Profile { header, events, model, resolver, symbolized: func_of, sample_stacks, time_range, warnings })
}

/// The name of one of rperf's own feature sections.
pub fn rperf_feature_name(feature: u32) -> Option<&'static str> {
    match feature {
        RPERF_KALLSYMS => Some("kallsyms snapshot"),
        RPERF_PERF_MAPS => Some("JIT symbol maps"),
        RPERF_JITDUMPS => Some("jitdumps"),
        RPERF_VDSO => Some("vDSO image"),
        _ => None,
    }
}

/// The JIT symbol maps rperf kept in its feature section 193: (pid u32, length u32, text)*.
fn embedded_perf_maps(mut d: &[u8]) -> HashMap<i32, String> {
    let mut out = HashMap::new();
    while d.len() >= 8 {
        let pid = u32::from_le_bytes(d[0..4].try_into().unwrap()) as i32;
        let len = u32::from_le_bytes(d[4..8].try_into().unwrap()) as usize;
        let Some(text) = d.get(8..8 + len) else { break };
        out.insert(pid, String::from_utf8_lossy(text).into_owned());
        d = &d[8 + len..];
    }
    out
}

/// The jitdump files rperf kept in its feature section 194: (path length u32, path, data
/// length u64, data)*, by the pid in their names.
fn embedded_jitdumps(mut d: &[u8]) -> HashMap<i32, Vec<u8>> {
    let mut out = HashMap::new();
    while d.len() >= 4 {
        let plen = u32::from_le_bytes(d[0..4].try_into().unwrap()) as usize;
        let Some(path) = d.get(4..4 + plen) else { break };
        let Some(len) = d.get(4 + plen..12 + plen).map(|b| u64::from_le_bytes(b.try_into().unwrap())) else {
            break;
        };
        let start = 12 + plen;
        let Some(data) = usize::try_from(len).ok().and_then(|l| d.get(start..start.checked_add(l)?)) else {
            break;
        };
        if let Some(pid) = crate::resolve::jitdump_pid(&String::from_utf8_lossy(path)) {
            out.insert(pid, data.to_vec());
        }
        d = &d[start + data.len()..];
    }
    out
}

/// Checks that the reader's parser may be given this record: it asserts (panics) on an MMAP2
/// record whose build-id length is over 20.
fn record_is_sane(record: &linux_perf_data::linux_perf_event_reader::RawEventRecord<'_>) -> bool {
    const MMAP_BUILD_ID: u16 = 1 << 14;
    if record.record_type == linux_perf_data::linux_perf_event_reader::RecordType::MMAP2
        && record.misc & MMAP_BUILD_ID != 0
    {
        // pid, tid (u32), addr, len, pgoff (u64), then the build id's length byte.
        return record.data.get(32..33).is_some_and(|b| b.as_slice()[0] <= 20);
    }
    true
}

/// linux-perf-event-reader reads a PERF_SAMPLE_READ block with the group and single layouts
/// swapped, so samples of counter groups (simpleperf's `--add-counter`) fail to parse. This
/// rewrites the block into the shape that reader expects (the counter values themselves are not
/// used by reports) and parses again.
fn reparse_read_group_sample<'a>(
    record: &linux_perf_data::linux_perf_event_reader::RawEventRecord<'_>,
    buf: &'a mut Vec<u8>,
) -> Option<linux_perf_data::linux_perf_event_reader::SampleRecord<'a>> {
    use linux_perf_data::linux_perf_event_reader::{
        RawData, ReadFormat, RecordType, SampleFormat, SampleRecord,
    };
    let info = record.parse_info;
    if record.record_type != RecordType::SAMPLE
        || !info.sample_format.contains(SampleFormat::READ)
        || !info.read_format.contains(ReadFormat::GROUP)
        || info.endian != linux_perf_data::Endianness::LittleEndian
    {
        return None;
    }
    let bytes = record.data.as_slice();
    let before = [
        SampleFormat::IDENTIFIER,
        SampleFormat::IP,
        SampleFormat::TID,
        SampleFormat::TIME,
        SampleFormat::ADDR,
        SampleFormat::ID,
        SampleFormat::STREAM_ID,
        SampleFormat::CPU,
        SampleFormat::PERIOD,
    ]
    .iter()
    .filter(|f| info.sample_format.contains(**f))
    .count();
    let start = before * 8;
    let word =
        |at: usize| -> Option<u64> { Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?)) };
    let nr = word(start)? as usize;
    let te = usize::from(info.read_format.contains(ReadFormat::TOTAL_TIME_ENABLED));
    let tr = usize::from(info.read_format.contains(ReadFormat::TOTAL_TIME_RUNNING));
    let id = usize::from(info.read_format.contains(ReadFormat::ID));
    // PERF_FORMAT_LOST (1 << 4) adds a lost count per value; the reader has no name for it.
    let lost = usize::from(info.read_format.bits() & (1 << 4) != 0);
    let real = 8 * (1 + te + tr + nr.checked_mul(1 + id + lost)?);
    let expected = 8 * (1 + te + tr + id);
    let end = start.checked_add(real)?;
    if end > bytes.len() {
        return None;
    }
    buf.clear();
    buf.extend_from_slice(&bytes[..start]);
    buf.resize(start + expected, 0);
    buf.extend_from_slice(&bytes[end..]);
    SampleRecord::parse::<byteorder::LittleEndian>(RawData::from(&buf[..]), record.misc, &info).ok()
}

pub(crate) fn leaf_matches(
    opts: &ReportOptions,
    model: &Model,
    resolver: &Resolver,
    leaf: crate::resolve::FuncId,
) -> bool {
    let f = &opts.filters;
    let func = &resolver.funcs[leaf as usize];
    if !f.symbols.is_empty() && !f.symbols.contains(&func.name) {
        return false;
    }
    if !f.dsos.is_empty() {
        let path = &model.dsos[func.dso as usize].path;
        let base = path.rsplit('/').next().unwrap_or(path);
        if !f.dsos.iter().any(|d| d == path || d == base) {
            return false;
        }
    }
    true
}

/// Buffers reused from sample to sample.
#[derive(Default)]
struct Scratch {
    raw: Vec<u64>,
}

/// Unwinds one sample into frame ids in `out` (innermost first); returns true when the stack
/// was cut short.
#[allow(clippy::too_many_arguments)]
fn stack_frames(
    s: &linux_perf_data::linux_perf_event_reader::SampleRecord<'_>,
    pid: i32,
    arch: Arch,
    model: &mut Model,
    resolver: &mut Resolver,
    max_stack: usize,
    scratch: &mut Scratch,
    out: &mut Vec<AddrId>,
) -> bool {
    out.clear();
    let default_ctx = match s.cpu_mode {
        CpuMode::Kernel => Context::Kernel,
        CpuMode::User => Context::User,
        _ => Context::Other,
    };
    let mut chain: Vec<ChainFrame> = match &s.callchain {
        Some(cc) if !cc.is_empty() => {
            scratch.raw.clear();
            scratch.raw.extend((0..cc.len()).filter_map(|i| cc.get(i)));
            split_callchain(&scratch.raw, default_ctx)
        }
        _ => {
            s.ip.map(|ip| vec![ChainFrame { addr: ip, context: default_ctx, is_ip: true }])
                .unwrap_or_default()
        }
    };
    let mut truncated = false;
    let stack = s.user_stack.as_ref().filter(|(d, dyn_size)| !d.is_empty() && *dyn_size > 0);
    if let (Some(regs), Some((data, dyn_size))) = (&s.user_regs, stack) {
        // DWARF mode: the kernel chain from the record, the user part unwound here.
        let (ip_reg, sp_reg, fp_reg, lr_reg) = match arch {
            Arch::X86_64 => (8, 7, 6, 6),
            Arch::Aarch64 => (32, 31, 29, 30),
        };
        if let (Some(ip), Some(sp)) = (regs.get(ip_reg), regs.get(sp_reg)) {
            let r = Regs { ip, sp, fp: regs.get(fp_reg).unwrap_or(0), lr: regs.get(lr_reg).unwrap_or(0) };
            let bytes = data.as_slice();
            let len = (*dyn_size as usize).min(bytes.len());
            let unwound = resolver.unwind(model, pid, r, &bytes[..len], MAX_UNWIND_FRAMES);
            truncated = unwound.truncated;
            chain.retain(|f| f.context == Context::Kernel);
            let first = chain.is_empty();
            for (i, f) in unwound.frames.iter().enumerate() {
                let (addr, is_ip) = match f {
                    CodeAddress::InstructionPointer(a) => (*a, first && i == 0),
                    CodeAddress::ReturnAddress(a) => (*a, false),
                };
                chain.push(ChainFrame { addr, context: Context::User, is_ip });
            }
        }
    }
    for f in chain.iter().take(max_stack) {
        let lookup = if f.is_ip { f.addr } else { f.addr.saturating_sub(1) };
        out.push(resolver.frame(model, pid, lookup, f.context));
    }
    truncated
}

fn kernel_symbols(
    opts: &ReportOptions,
    perf_file: &linux_perf_data::PerfFile,
    stored: &[linux_perf_data::SimpleperfFileRecord],
) -> Result<KernelSource, Error> {
    let ready = |k| Ok(KernelSource::Ready(k));
    if let Some(p) = &opts.kallsyms {
        let text = std::fs::read_to_string(p).map_err(|e| Error::Open { path: p.clone(), source: e })?;
        return ready(KernelSymbols::from_kallsyms(&text));
    }
    if let Some(d) = perf_file.feature_section_data(Feature(RPERF_KALLSYMS)) {
        let text = String::from_utf8_lossy(d).into_owned();
        return Ok(KernelSource::Pending(Box::new(move || (KernelSymbols::from_kallsyms(&text), None))));
    }
    let stored_kernel: Vec<(u64, u64, String)> = stored
        .iter()
        .filter(|r| r.r#type == linux_perf_data::simpleperf_dso_type::DSO_KERNEL)
        .flat_map(|r| r.symbol.iter().map(|s| (s.vaddr, s.len as u64, s.name.clone())))
        .collect();
    if !stored_kernel.is_empty() {
        return ready(KernelSymbols::from_table(SymbolTable::new(stored_kernel)));
    }
    // The running kernel's symbols fit a recording made on this kernel.
    let running = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let recorded = perf_file.os_release().ok().flatten().unwrap_or_default();
    if !recorded.is_empty() && recorded == running.trim() {
        // The kernel formats /proc/kallsyms slowly (~50 ms); read it beside the records.
        let mut loading = Some(std::thread::spawn(|| {
            let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
            KernelSymbols::from_kallsyms(&text)
        }));
        return Ok(KernelSource::Pending(Box::new(move || {
            let k = loading.take().and_then(|h| h.join().ok()).unwrap_or_default();
            let warning = k.table.is_empty().then(|| {
                "kernel addresses in /proc/kallsyms are hidden (kptr_restrict); kernel frames stay [unknown]: \
                 run as root or set kernel.kptr_restrict=0"
                    .to_string()
            });
            (k, warning)
        })));
    }
    ready(KernelSymbols::default())
}

impl Profile {
    /// The names outputs print.
    pub(crate) fn names(&self) -> Names<'_> {
        Names { model: &self.model, funcs: &self.resolver.funcs, srclines: &self.resolver.srclines }
    }

    /// The event stack outputs show: the first with samples.
    pub(crate) fn main_event(&self) -> Option<&EventState> {
        self.events.iter().find(|e| e.agg.samples > 0).or(self.events.first())
    }

    /// Folded lines of the main event.
    fn main_lines(&self, opts: &ReportOptions) -> Vec<(String, u64)> {
        match self.main_event() {
            Some(e) => crate::flame::folded_lines(&e.agg, &self.names(), FoldStyle::new(opts, e.time_in_ns)),
            None => Vec::new(),
        }
    }

    /// What the weights of stack outputs count.
    pub(crate) fn count_name(&self, opts: &ReportOptions) -> &'static str {
        let time = self.main_event().is_some_and(|e| e.time_in_ns);
        if time {
            "ns"
        } else if opts.event_counts {
            "events"
        } else {
            "samples"
        }
    }

    /// The title of flamegraphs.
    pub(crate) fn title(&self, opts: &ReportOptions) -> String {
        opts.title.clone().unwrap_or_else(|| {
            let event = self.main_event().map_or("no samples", |e| e.name.as_str());
            match &opts.diff_base {
                Some(base) => format!("rperf: {event}, {} against {}", opts.input.display(), base.display()),
                None => format!("rperf: {event}"),
            }
        })
    }

    /// Writes the report in the chosen format.
    pub fn write(&self, out: &mut dyn Write, opts: &ReportOptions) -> std::io::Result<()> {
        let names = self.names();
        let base = match &opts.diff_base {
            Some(path) => {
                let base_opts = ReportOptions { input: path.clone(), diff_base: None, ..opts.clone() };
                Some(load(&base_opts).map_err(|e| std::io::Error::other(format!("--diff: {e}")))?)
            }
            None => None,
        };
        if base.is_some() && !matches!(opts.format, crate::Format::Svg | crate::Format::Html) {
            return Err(std::io::Error::other("--diff makes a flamegraph: use --format svg or html"));
        }
        match opts.format {
            crate::Format::Text => self.write_text(out, opts),
            crate::Format::Folded => {
                for e in &self.events {
                    crate::flame::write_folded(out, &e.agg, &names, FoldStyle::new(opts, e.time_in_ns))?;
                }
                Ok(())
            }
            crate::Format::Svg => {
                let title = self.title(opts);
                let style = crate::flame::SvgStyle {
                    title: &title,
                    count_name: self.count_name(opts),
                    inverted: opts.inverted,
                    reverse: opts.reverse,
                };
                let lines = self.main_lines(opts);
                match &base {
                    Some(b) => crate::flame::write_diff_svg(out, &b.main_lines(opts), &lines, &style),
                    None => crate::flame::write_svg(out, &lines, &style),
                }
            }
            crate::Format::Html => crate::html::write(out, self, opts, base.as_ref()),
            crate::Format::Pprof => crate::pprof::write(out, self, opts),
            crate::Format::Gecko => crate::gecko::write(out, self, opts),
            crate::Format::Json => crate::json::write(out, self, opts),
        }
    }

    /// Writes the text report.
    pub fn write_text(&self, out: &mut dyn Write, opts: &ReportOptions) -> std::io::Result<()> {
        let sections: Vec<Section<'_>> = self
            .events
            .iter()
            .filter(|e| e.agg.samples > 0 || self.events.len() == 1)
            .map(|e| Section {
                name: e.name.clone(),
                type_: e.type_,
                config: e.config,
                agg: &e.agg,
                lost: e.lost,
                truncated: e.truncated,
                time_in_ns: e.time_in_ns,
            })
            .collect();
        text::write(out, &self.header, &sections, &self.names(), opts)
    }
}
