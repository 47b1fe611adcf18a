//! The recording loop: open events, drain ring buffers into perf.data, stop cleanly.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use rperf_perfdata::encode::{self, BuildIdEntry};
use rperf_perfdata::feature;
use rperf_symbols::{buildid, kallsyms};

use crate::control::{Control, ControlLine, CONTROL_LINE_MAX};
use crate::error::open_remedy;
use crate::event::EventSpec;
use crate::jit_debug::JitDebugReader;
use crate::launch::{self, Launched};
use crate::options::{CallGraph, Rate, RecordOptions, DEFAULT_FREQUENCY};
use crate::plan::Plan;
use crate::post_unwind::PostUnwinder;
use crate::procfs;
use crate::records::{RecordBuilder, SampleId};
use crate::ring::RingBuffer;
use crate::sample as sample_fields;
use crate::sys::{self, misc, perf_event_attr, record_type, sample};
use crate::target::{self, Target};
use crate::writer::{self, FileAttr, PerfDataWriter};
use crate::Error;

/// Why a recording ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The launched command exited.
    CommandExited,
    /// `--duration` elapsed.
    Duration,
    /// SIGINT, SIGTERM or SIGHUP.
    Signal(i32),
    /// Every target process or thread exited.
    TargetsExited,
    /// Every process of the app (`--app`) exited.
    AppExited,
    /// Asked to stop: `--stop-fd`, a `stop` command on `--control`.
    Requested,
    /// `--size-limit` was reached.
    SizeLimit,
    /// Writing failed (e.g. disk full); the file holds what was written before.
    WriteError(String),
}

/// What a finished recording reports.
#[derive(Clone, Debug)]
pub struct RecordSummary {
    /// Samples taken.
    pub samples: u64,
    /// Samples the file holds (fewer than taken when writing failed).
    pub samples_written: u64,
    /// Samples the kernel reported lost (their ring buffer was full).
    pub lost: u64,
    /// Side-band records (mmap, comm, fork, exit) the kernel reported lost; these have a ring
    /// buffer of their own, so that sample overload cannot push them out.
    pub lost_sideband: u64,
    /// Samples whose DWARF stack copy was cut short because the ring buffer was filling up.
    pub cut_stacks: u64,
    /// With `--post-unwind`: samples unwound while recording.
    pub unwound: u64,
    /// Of those, the ones whose unwinding stopped before the stack's end (a binary without
    /// CFI, a stack copy too short).
    pub unwind_incomplete: u64,
    /// Size of the file.
    pub bytes: u64,
    /// The launched command's exit code (128+signal when it was killed).
    pub exit_code: Option<i32>,
    /// Why recording stopped.
    pub stop: StopReason,
    /// Notes for the user (fallbacks taken, limits hit).
    pub notes: Vec<String>,
}

/// Records according to `opts`. Notes are passed to `note` as they happen.
pub fn record(opts: &RecordOptions, note: &mut dyn FnMut(&str)) -> Result<RecordSummary, Error> {
    let mut session = Session::open(opts, note)?;
    session.run(note)
}

struct OpenEvent {
    spec: EventSpec,
    attr: perf_event_attr,
    ids: Vec<u64>,
    /// The side-band event: a dummy software event that never samples and carries the mmap,
    /// comm and task records in a ring buffer of its own.
    sideband: bool,
}

/// Ring-buffer pages per CPU for side-band records.
const SIDEBAND_PAGES: usize = 64;

/// Under pressure (a ring buffer at least half full when drained), DWARF stack copies are cut
/// to this many bytes: the innermost frames still unwind, and the writer keeps up.
const CUT_STACK_BYTES: u64 = 1024;

struct CpuBuffer {
    cpu: u32,
    fd: RawFd,
    ring: RingBuffer,
}

/// Consumes records coming out of the ring buffers.
struct Sink {
    writer: PerfDataWriter,
    sample_types: HashMap<u64, u64>,
    regs_count: usize,
    samples: u64,
    lost: u64,
    lost_sideband: u64,
    cut_stacks: u64,
    /// Set while draining a ring buffer that was at least half full.
    pressure: bool,
    kernel_hits: BTreeSet<u64>,
    /// Processes seen (by their COMM records), whose JIT symbol maps are kept at the end.
    /// Recorded processes, with their owners (who may own their JIT maps).
    pids: BTreeMap<u32, Option<u32>>,
    /// jitdump files the runtimes announced with their marker mmaps.
    /// jitdump files the recorded processes mapped, with the mapping process's owner.
    jitdumps: BTreeMap<String, Option<u32>>,
    dsos: BTreeMap<String, Option<Vec<u8>>>,
    trim: bool,
    stacks: StackEnds,
    error: Option<Error>,
    /// Samples of this pid (rperf's own, with --exclude-perf) are left out.
    exclude_pid: Option<u32>,
    /// The GDB JIT interface of the recorded processes.
    jit: JitDebugReader,
    /// Unwinds DWARF samples as they come (`--post-unwind`).
    post: Option<PostUnwinder>,
    /// Threads created by threads with events, which inherited them (from the kernel's FORK
    /// records).
    forked_tids: std::collections::HashSet<u32>,
    /// Set while handling records made from /proc, which are no sign of inherited events.
    synthesizing: bool,
}

/// Where each process's stacks end, so that stack copies can stop there. Read from
/// /proc/PID/maps when a stack pointer falls outside what is known, at most every 20 ms per
/// process.
#[derive(Default)]
struct StackEnds {
    maps: HashMap<u32, (Instant, Vec<(u64, u64)>)>,
}

impl StackEnds {
    fn end_of(&mut self, pid: u32, sp: u64) -> Option<u64> {
        let find = |v: &Vec<(u64, u64)>| {
            let i = v.partition_point(|(start, _)| *start <= sp);
            (i > 0 && sp < v[i - 1].1).then(|| v[i - 1].1)
        };
        if let Some((_, v)) = self.maps.get(&pid) {
            if let Some(end) = find(v) {
                return Some(end);
            }
        }
        let stale = self.maps.get(&pid).is_none_or(|(t, _)| t.elapsed() >= Duration::from_millis(20));
        if !stale {
            return None;
        }
        let ranges: Vec<(u64, u64)> = procfs::maps_of(pid as i32).iter().map(|m| (m.start, m.end)).collect();
        let end = find(&ranges);
        self.maps.insert(pid, (Instant::now(), ranges));
        end
    }

    fn forget(&mut self, pid: u32) {
        self.maps.remove(&pid);
    }
}

impl Sink {
    /// Handles a record from a side-band ring buffer.
    fn handle_sideband(&mut self, rec: &[u8]) {
        if u32::from_le_bytes(rec[0..4].try_into().expect("8-byte header")) == record_type::LOST {
            self.lost_sideband += rec.get(16..24).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
        }
        self.handle(rec);
    }

    fn handle(&mut self, rec: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let type_ = u32::from_le_bytes(rec[0..4].try_into().expect("8-byte header"));
        let misc_bits = u16::from_le_bytes([rec[4], rec[5]]);
        let mut trimmed = None;
        match type_ {
            record_type::SAMPLE => {
                let id = rec.get(8..16).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
                let st = self.sample_types.get(&id).copied().unwrap_or(0);
                let parsed = sample_fields::parse(rec, st, self.regs_count);
                let unwinding = st & sample::STACK_USER != 0 && self.post.is_some();
                if unwinding && parsed.is_none() {
                    // Its attribute says "no stack": a sample that can't be unwound is left out.
                    return;
                }
                if let Some(v) = parsed {
                    if Some(v.pid) == self.exclude_pid {
                        return;
                    }
                    self.samples += 1;
                    self.note_kernel_addresses(misc_bits, &v);
                    // Code no binary or symbol file describes may be JIT code registered since
                    // the interface was last read.
                    let ip = v.user_reg(sys::IP_REG_INDEX);
                    if let (Some(post), Some(ip)) = (self.post.as_ref().filter(|_| unwinding), ip) {
                        if !post.covers(v.pid, ip) && self.jit.watches(v.pid) {
                            self.jit.poll_now(v.pid);
                            self.sync_jit();
                        }
                    }
                    if let Some(post) = self.post.as_mut().filter(|_| unwinding) {
                        match post.rewrite(&v, st, sys::USER_REGS_MASK) {
                            Some(out) => trimmed = Some(out),
                            None => return,
                        }
                    } else if self.trim {
                        let sp_index = (sys::USER_REGS_MASK & ((1u64 << sys::SP_REG_BIT) - 1)).count_ones();
                        let mut limit = v
                            .user_reg(sp_index as usize)
                            .and_then(|sp| Some(self.stacks.end_of(v.pid, sp)? - sp));
                        if self.pressure {
                            // Counted as cut only when the stack held more than is kept.
                            let filled =
                                v.stack_at.and_then(|at| sample_fields::stack_sizes(rec, at)).map(|s| s.1);
                            let needed = filled.unwrap_or(0).min(limit.unwrap_or(u64::MAX));
                            if needed > CUT_STACK_BYTES {
                                self.cut_stacks += 1;
                            }
                            limit = Some(limit.map_or(CUT_STACK_BYTES, |l| l.min(CUT_STACK_BYTES)));
                        }
                        trimmed = v.stack_at.and_then(|at| sample_fields::trim_stack(rec, at, limit));
                    }
                }
            }
            record_type::LOST => {
                self.lost += rec.get(16..24).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
            }
            record_type::LOST_SAMPLES => {
                self.lost += rec.get(8..16).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
            }
            record_type::MMAP2 | record_type::MMAP => self.note_mmap(type_, misc_bits, rec),
            record_type::FORK => {
                if let Some(tid) = rec.get(16..20).filter(|_| !self.synthesizing) {
                    self.forked_tids.insert(u32::from_le_bytes(tid.try_into().unwrap()));
                }
                if let (Some(pid), Some(ppid), Some(post)) =
                    (rec.get(8..12), rec.get(12..16), self.post.as_mut())
                {
                    let pid = u32::from_le_bytes(pid.try_into().unwrap());
                    post.fork(u32::from_le_bytes(ppid.try_into().unwrap()), pid);
                }
            }
            record_type::COMM => {
                if let Some(pid) = rec.get(8..12) {
                    let pid = u32::from_le_bytes(pid.try_into().unwrap());
                    self.pids.entry(pid).or_insert_with(|| procfs::uid_of(pid as i32));
                    if misc_bits & misc::COMM_EXEC != 0 {
                        self.jit.exec(pid);
                        if let Some(post) = self.post.as_mut() {
                            post.exec(pid);
                        }
                    }
                }
            }
            record_type::EXIT => {
                if let (Some(pid), Some(tid)) = (rec.get(8..12), rec.get(16..20)) {
                    let pid = u32::from_le_bytes(pid.try_into().unwrap());
                    self.stacks.forget(pid);
                    if *tid == pid.to_le_bytes() {
                        self.jit.exit(pid);
                        if let Some(post) = self.post.as_mut() {
                            post.exit(pid);
                        }
                    }
                }
            }
            _ => {}
        }
        let out = trimmed.as_deref().unwrap_or(rec);
        if let Err(e) = self.writer.write_record(out) {
            self.error = Some(e);
        }
    }

    /// Hands the JIT interface's new symbol files to the unwinder: their CFI unwinds JIT code.
    fn sync_jit(&mut self) {
        let fresh = self.jit.store.take_fresh();
        let Some(post) = self.post.as_mut() else { return };
        for f in fresh {
            post.jit_code(f.pid, f.code, &f.image);
        }
    }

    fn note_kernel_addresses(&mut self, misc_bits: u16, v: &sample_fields::SampleView<'_>) {
        if misc_bits & misc::CPUMODE_MASK == misc::KERNEL {
            self.kernel_hits.insert(v.ip);
        }
        let mut in_kernel = false;
        for &addr in &v.callchain {
            if addr >= sys::PERF_CONTEXT_MAX {
                in_kernel = addr == sys::PERF_CONTEXT_KERNEL;
            } else if in_kernel {
                self.kernel_hits.insert(addr);
            }
        }
    }

    fn note_mmap(&mut self, type_: u32, misc_bits: u16, rec: &[u8]) {
        if misc_bits & misc::CPUMODE_MASK == misc::KERNEL {
            return;
        }
        // pid, tid, addr, len, pgoff: the same place in MMAP and MMAP2.
        let u64_at = |at: usize| rec.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap()));
        let pid = rec.get(8..12).map(|b| u32::from_le_bytes(b.try_into().unwrap()));
        if let (Some(post), Some(pid), Some(addr), Some(len), Some(pgoff)) =
            (self.post.as_mut(), pid, u64_at(16), u64_at(24), u64_at(32))
        {
            if let Some(path) = code_path(type_, misc_bits, rec) {
                post.mmap(pid, addr, len, pgoff, &path);
            }
        }
        if let Some((path, build_id)) = exec_mapping(type_, misc_bits, rec) {
            if let Some(pid) = rperf_perfdata::jitdump_pid(&path) {
                self.jitdumps.entry(path).or_insert_with(|| procfs::uid_of(pid));
                return;
            }
            if let (Some(pid), Some(addr), Some(pgoff)) = (pid, u64_at(16), u64_at(32)) {
                self.jit.note_mapping(pid, addr, pgoff, &path);
                self.sync_jit();
            }
            let entry = self.dsos.entry(path).or_insert(None);
            if entry.is_none() {
                *entry = build_id;
            }
        }
    }
}

/// The path of an executable mapping's code that can be unwound: a file, or the vDSO.
fn code_path(type_: u32, misc_bits: u16, rec: &[u8]) -> Option<String> {
    if let Some((path, _)) = exec_mapping(type_, misc_bits, rec) {
        return Some(path);
    }
    let name_at = if type_ == record_type::MMAP2 { 72 } else { 40 };
    let name = rec.get(name_at..)?;
    let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
    (&name[..end] == b"[vdso]").then(|| "[vdso]".to_string())
}

/// The file and build id of an executable, file-backed MMAP or MMAP2 record.
///
/// MMAP2 layout after the header: pid, tid (u32), addr, len, pgoff (u64), then 24 bytes of
/// maj/min/ino/generation or (with MMAP_BUILD_ID) a size byte, 3 reserved and 20 id bytes,
/// then prot, flags (u32) and the file name at byte 72.
fn exec_mapping(type_: u32, misc_bits: u16, rec: &[u8]) -> Option<(String, Option<Vec<u8>>)> {
    let u32_at = |at: usize| rec.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()));
    let (exec, name_at, build_id) = if type_ == record_type::MMAP2 {
        let bid = if misc_bits & misc::MMAP_BUILD_ID != 0 {
            let n = (*rec.get(40)?).min(20) as usize;
            rec.get(44..44 + n).map(<[u8]>::to_vec)
        } else {
            None
        };
        (u32_at(64)? & 4 != 0, 72, bid)
    } else {
        // MMAP: pid, tid, addr, len, pgoff, then the name at byte 40; data maps are marked.
        (misc_bits & (1 << 13) == 0, 40, None)
    };
    if !exec {
        return None;
    }
    let name = rec.get(name_at..)?;
    let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
    let path = String::from_utf8_lossy(&name[..end]).into_owned();
    let real_file = path.starts_with('/') && !path.starts_with("/memfd:") && !path.ends_with(" (deleted)");
    real_file.then_some((path, build_id))
}

struct Session {
    opts: RecordOptions,
    events: Vec<OpenEvent>,
    fds: Vec<OwnedFd>,
    /// The sampling events' descriptors (not the sideband's), which delay and control switch.
    sample_fds: Vec<i32>,
    /// Sampling is on (off during --delay and after a `disable` command).
    sampling: bool,
    /// How long sampling was on, and since when it is.
    recorded: Duration,
    sampling_since: Option<Instant>,
    /// How long the recording lasted, once it ended.
    elapsed: Option<Duration>,
    control: Option<Control>,
    buffers: Vec<CpuBuffer>,
    sideband: Vec<CpuBuffer>,
    cpus: Vec<u32>,
    data_pages: usize,
    side_pages: usize,
    sink: Sink,
    child: Option<Launched>,
    watched: BTreeSet<i32>,
    /// Threads of attached processes whose events were opened directly.
    opened_tids: std::collections::HashSet<i32>,
    /// Processes attached since the recording loop last looked for their threads: threads
    /// created while they were attached are found once, after that (later ones inherit).
    just_attached: Vec<i32>,
    /// Finds the processes of the app (`--app`) as they start.
    app: Option<target::AppWatcher>,
    /// CPU time the last attached process had used when its events were open.
    attached_after: Option<Duration>,
    builder: RecordBuilder,
    notes: Vec<String>,
    kallsyms_text: Result<std::sync::Arc<String>, String>,
    kernel_syms: Option<std::thread::JoinHandle<Vec<kallsyms::KernelSymbol>>>,
}

/// Whether the parent asked to stop through `fd`: a byte written, or the parent gone.
fn stop_requested(fd: i32) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd, for the duration of the call.
    let ready = unsafe { libc::poll(&mut p, 1, 0) };
    ready > 0 && p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0
}

fn regs_count() -> usize {
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

impl Session {
    /// Turns the sampling events on or off, counting how long they were on.
    fn set_sampling(&mut self, on: bool) {
        if on == self.sampling {
            return;
        }
        for &fd in &self.sample_fds {
            if on { sys::ioc_enable(fd) } else { sys::ioc_disable(fd) }.ok();
        }
        match (on, self.sampling_since.take()) {
            (true, _) => self.sampling_since = Some(Instant::now()),
            (false, Some(since)) => self.recorded += since.elapsed(),
            (false, None) => {}
        }
        self.sampling = on;
    }

    fn open(opts: &RecordOptions, note: &mut dyn FnMut(&str)) -> Result<Session, Error> {
        launch::reset_stop_signal();
        let Plan { opts, specs, rate, sample_type, cpus, data_pages, side_pages, notes } =
            Plan::new(opts, note)?;
        let opts = &opts;
        let launch_cmd = matches!(opts.target, Target::Command(_));
        let mut events: Vec<OpenEvent> = specs
            .iter()
            .map(|spec| OpenEvent {
                spec: spec.clone(),
                attr: make_attr(
                    spec,
                    rate,
                    opts,
                    false,
                    sample_type,
                    data_pages,
                    launch_cmd && opts.delay.is_none(),
                ),
                ids: Vec::new(),
                sideband: false,
            })
            .collect();
        let dummy = EventSpec {
            name: "dummy".into(),
            type_: sys::attr_type::SOFTWARE,
            config: sys::SW_DUMMY,
            exclude_kernel: false,
            exclude_user: false,
            modifier: String::new(),
        };
        let mut side_attr = make_attr(&dummy, rate, opts, true, sample_type, side_pages, launch_cmd);
        // The dummy event never fires; it exists for the records its flags ask for.
        side_attr.set_freq(0);
        side_attr.__bindgen_anon_1.sample_period = 1;
        events.push(OpenEvent { spec: dummy, attr: side_attr, ids: Vec::new(), sideband: true });

        let child = match &opts.target {
            Target::Command(argv) => Some(Launched::prepare(argv)?),
            _ => None,
        };
        let builder = RecordBuilder { sample_type };
        let writer = match opts.out_fd {
            Some(fd) => {
                use std::os::fd::FromRawFd;
                // SAFETY: the fd was handed to this process for the recording (`--out-fd`);
                // nothing else in it uses that number.
                let file = unsafe { std::fs::File::from_raw_fd(fd) };
                PerfDataWriter::create_in(file, &opts.output, &[])?
            }
            None => PerfDataWriter::create(&opts.output, &[])?,
        };
        let mut sink = Sink {
            writer,
            sample_types: HashMap::new(),
            regs_count: regs_count(),
            samples: 0,
            lost: 0,
            lost_sideband: 0,
            cut_stacks: 0,
            pressure: false,
            kernel_hits: BTreeSet::new(),
            pids: BTreeMap::new(),
            jitdumps: BTreeMap::new(),
            jit: JitDebugReader::new(opts.jit_interface, opts.jit_limits),
            post: (opts.post_unwind && matches!(opts.call_graph, CallGraph::Dwarf { .. }))
                .then(PostUnwinder::new),
            dsos: BTreeMap::new(),
            trim: matches!(opts.call_graph, CallGraph::Dwarf { .. }),
            stacks: StackEnds::default(),
            error: None,
            exclude_pid: opts.exclude_perf.then(std::process::id),
            forked_tids: Default::default(),
            synthesizing: false,
        };
        if sink.post.is_some() {
            // The unwinder is handed each new symbol file (its CFI unwinds JIT code).
            sink.jit.store.keep_fresh();
        }
        let mut s = Session {
            opts: opts.clone(),
            events,
            fds: Vec::new(),
            sample_fds: Vec::new(),
            sampling: opts.delay.is_none(),
            recorded: Duration::ZERO,
            sampling_since: None,
            elapsed: None,
            control: opts.control.as_ref().map(|(c, a)| Control::open(c, a.as_deref())).transpose()?,
            buffers: Vec::new(),
            sideband: Vec::new(),
            cpus,
            data_pages,
            side_pages,
            sink,
            child,
            watched: BTreeSet::new(),
            opened_tids: Default::default(),
            just_attached: Vec::new(),
            app: None,
            attached_after: None,
            builder,
            notes,
            kallsyms_text: kallsyms::read_proc_text().map(std::sync::Arc::new),
            kernel_syms: None,
        };
        match &s.kallsyms_text {
            // Parsing takes a while; it runs beside the recording and is needed only at the end.
            Ok(text) => {
                let text = text.clone();
                s.kernel_syms = Some(std::thread::spawn(move || kallsyms::parse(&text)));
            }
            Err(why) => {
                note(why);
                s.notes.push(why.clone());
            }
        }
        s.write_kernel_mmap()?;
        match s.opts.target.clone() {
            Target::Command(_) => {
                let pid = s.child.as_ref().expect("launched").pid;
                s.open_task(pid, note)?;
            }
            Target::Processes(pids) => {
                for pid in pids {
                    s.attach_process(pid, note)?;
                }
            }
            Target::Threads(tids) => {
                for tid in tids {
                    s.open_task(tid, note)?;
                    let pid = procfs::tgid_of(tid).unwrap_or(tid);
                    s.synthesize(pid, Some(tid));
                    s.watched.insert(tid);
                }
            }
            Target::SystemWide => {
                s.open_task(-1, note)?;
                for pid in procfs::all_pids() {
                    s.synthesize(pid, None);
                }
            }
            Target::App(name) => {
                let mut watcher = target::AppWatcher::new(&name);
                let found = watcher.scan();
                s.app = Some(watcher);
                if found.is_empty() {
                    note(&format!("waiting for app {name} to start (Ctrl-C to stop)"));
                }
                for pid in found {
                    s.attach_process(pid, note)?;
                }
            }
        }
        s.sync_attrs()?;
        Ok(s)
    }

    fn write_kernel_mmap(&mut self) -> Result<(), Error> {
        let Ok(text) = &self.kallsyms_text else { return Ok(()) };
        let start = kallsyms::find_address(text, "_text").or_else(|| kallsyms::find_address(text, "_stext"));
        if let Some(start) = start {
            let end = kallsyms::find_address(text, "_etext").unwrap_or(start + (64 << 20));
            let sid = SampleId { pid: u32::MAX, tid: 0, ..Default::default() };
            let rec = self.builder.kernel_mmap(start, end - start, start, &sid);
            self.sink.writer.write_record(&rec)?;
        }
        Ok(())
    }

    fn attach_process(&mut self, pid: i32, note: &mut dyn FnMut(&str)) -> Result<(), Error> {
        // Threads created after a thread's events are open inherit them; one created between
        // listing the threads and opening their events does not: `follow_threads` opens those.
        for tid in procfs::threads_of(pid) {
            self.opened_tids.insert(tid);
            match self.open_task(tid, note) {
                Ok(()) => {}
                // A thread that exited between listing and opening is not an error.
                Err(Error::Open { source, .. }) if source.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => return Err(e),
            }
        }
        self.attached_after = procfs::cpu_time(pid);
        self.synthesize(pid, None);
        self.watched.insert(pid);
        self.just_attached.push(pid);
        Ok(())
    }

    /// Opens the events of threads of attached processes that have none: listed (in `listed`)
    /// after their process was attached and before the last drain, neither opened directly nor
    /// created by a thread with events (the kernel writes a FORK record for those, which that
    /// drain read). They were created while their process was being attached; threads created
    /// after that inherit the events.
    fn follow_threads(&mut self, listed: Vec<i32>, note: &mut dyn FnMut(&str)) {
        for tid in listed {
            if self.opened_tids.contains(&tid) || self.sink.forked_tids.contains(&(tid as u32)) {
                continue;
            }
            self.opened_tids.insert(tid);
            match self.open_task(tid, note) {
                Ok(()) => {
                    if let Err(e) = self.sync_attrs() {
                        self.sink.error.get_or_insert(e);
                    }
                }
                Err(Error::Open { source, .. }) if source.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => {
                    self.sink.error.get_or_insert(e);
                }
            }
        }
    }

    fn synthesize(&mut self, pid: i32, only_tid: Option<i32>) {
        let id = self.events.iter().find(|e| e.sideband).and_then(|e| e.ids.first()).copied().unwrap_or(0);
        let mut recs = Vec::new();
        let mut cache: HashMap<String, Option<Vec<u8>>> = HashMap::new();
        procfs::synthesize_process(
            pid,
            &self.builder,
            id,
            matches!(self.opts.call_graph, CallGraph::Dwarf { .. }),
            &mut |path| {
                cache
                    .entry(path.to_string())
                    .or_insert_with(|| buildid::of_file(std::path::Path::new(path)))
                    .clone()
            },
            &mut |r| recs.push(r),
        );
        for r in recs {
            if let Some(tid) = only_tid {
                // COMM and FORK records of other threads are not wanted for a -t target.
                let t = u32::from_le_bytes(r[0..4].try_into().unwrap());
                let rtid = u32::from_le_bytes(r[12..16].try_into().unwrap());
                if t == record_type::COMM && rtid as i32 != tid {
                    continue;
                }
                if t == record_type::FORK {
                    continue;
                }
            }
            self.sink.synthesizing = true;
            self.sink.handle(&r);
            self.sink.synthesizing = false;
        }
    }

    /// Opens every event for `pid` (a tid, or -1 for all) on every CPU.
    fn open_task(&mut self, pid: i32, note: &mut dyn FnMut(&str)) -> Result<(), Error> {
        for ci in 0..self.cpus.len() {
            let cpu = self.cpus[ci];
            for ei in 0..self.events.len() {
                let fd = self.open_one(ei, pid, cpu, note)?;
                let raw = fd.as_raw_fd();
                let id = sys::ioc_id(raw).map_err(|e| Error::Open {
                    event: self.events[ei].spec.display_name(),
                    target: describe(pid, cpu),
                    source: e,
                    remedy: "the kernel is too old for PERF_EVENT_IOC_ID (needs 3.12)".into(),
                })?;
                let sideband = self.events[ei].sideband;
                let rings = if sideband { &self.sideband } else { &self.buffers };
                if let Some(buf) = rings.iter().find(|b| b.cpu == cpu) {
                    sys::ioc_set_output(raw, buf.fd).map_err(|e| Error::Open {
                        event: self.events[ei].spec.display_name(),
                        target: describe(pid, cpu),
                        source: e,
                        remedy: "cannot share the CPU's ring buffer".into(),
                    })?;
                } else if sideband {
                    let (ring, _) = map_halving(raw, self.side_pages)?;
                    self.sideband.push(CpuBuffer { cpu, fd: raw, ring });
                } else {
                    let ring = self.map_ring(raw, note)?;
                    self.buffers.push(CpuBuffer { cpu, fd: raw, ring });
                }
                self.events[ei].ids.push(id);
                let st = self.events[ei].attr.sample_type;
                self.sink.sample_types.insert(id, st);
                if !sideband {
                    self.sample_fds.push(raw);
                }
                // A launched command's events start at its exec (unless sampling waits for a
                // delay); the others now, sampling events only while sampling is on.
                if !matches!(self.opts.target, Target::Command(_)) && (sideband || self.sampling) {
                    sys::ioc_enable(raw).ok();
                }
                self.fds.push(fd);
            }
        }
        Ok(())
    }

    fn open_one(
        &mut self,
        ei: usize,
        pid: i32,
        cpu: u32,
        note: &mut dyn FnMut(&str),
    ) -> Result<OwnedFd, Error> {
        let system_wide = pid == -1;
        loop {
            let ev = &mut self.events[ei];
            let mut attr = ev.attr;
            match sys::perf_event_open(&mut attr, pid, cpu as i32, -1) {
                Ok(fd) => return Ok(fd),
                Err(e) => {
                    let code = e.raw_os_error();
                    // Older kernels lack build ids in mmap records: drop them and go on.
                    if code == Some(libc::EINVAL) && ev.attr.build_id() != 0 {
                        ev.attr.set_build_id(0);
                        continue;
                    }
                    // Kernels before 4.1 stamp samples with perf's own clock only.
                    if code == Some(libc::EINVAL) && ev.attr.use_clockid() != 0 {
                        ev.attr.set_use_clockid(0);
                        continue;
                    }
                    // Without the right to sample the kernel, sample user space only.
                    if matches!(code, Some(libc::EACCES) | Some(libc::EPERM))
                        && ev.attr.exclude_kernel() == 0
                        && ev.spec.modifier.is_empty()
                        && !system_wide
                        && crate::error::foreign_owner(pid).is_none()
                    {
                        ev.attr.set_exclude_kernel(1);
                        ev.attr.set_exclude_callchain_kernel(1);
                        if !ev.sideband {
                            let msg = format!(
                                "not allowed to sample the kernel (perf_event_paranoid={}); recording \
                                 '{}' in user space only; run as root (or with CAP_PERFMON) or set \
                                 `sysctl kernel.perf_event_paranoid=1` for kernel samples",
                                crate::error::paranoid_level().map_or("?".into(), |l| l.to_string()),
                                ev.spec.display_name()
                            );
                            note(&msg);
                            self.notes.push(msg);
                        }
                        continue;
                    }
                    return Err(Error::Open {
                        event: ev.spec.display_name(),
                        target: describe(pid, cpu),
                        remedy: open_remedy(&e, ev.spec.is_hardware(), system_wide, pid),
                        source: e,
                    });
                }
            }
        }
    }

    fn map_ring(&mut self, fd: RawFd, note: &mut dyn FnMut(&str)) -> Result<RingBuffer, Error> {
        let (ring, pages) = map_halving(fd, self.data_pages)?;
        if pages != self.data_pages {
            let msg = format!(
                "the locked-memory limit allows only {pages} ring-buffer pages per CPU (asked for {}); \
                 raise kernel.perf_event_mlock_kb or `ulimit -l` if samples are lost",
                self.data_pages
            );
            note(&msg);
            self.notes.push(msg);
            self.data_pages = pages;
        }
        Ok(ring)
    }

    fn file_attrs(&self) -> Vec<FileAttr> {
        self.events
            .iter()
            .map(|e| FileAttr {
                // Samples unwound while recording carry a call chain, not the stack.
                attr: sys::attr_bytes(&match self.sink.post {
                    Some(_) => crate::post_unwind::unwound_attr(e.attr),
                    None => e.attr,
                }),
                ids: e.ids.clone(),
                name: e.spec.display_name(),
            })
            .collect()
    }

    fn sync_attrs(&mut self) -> Result<(), Error> {
        let attrs = self.file_attrs();
        self.sink.writer.update_attrs(&attrs)
    }

    /// Drains the side-band rings first, so that a sample's mappings are written before it,
    /// then the sample rings, cutting stack copies of rings that are at least half full.
    fn drain(&mut self) {
        let Session { buffers, sideband, sink, data_pages, .. } = self;
        for b in sideband.iter_mut() {
            b.ring.drain(|rec| sink.handle_sideband(rec));
        }
        let half = (*data_pages * sys::page_size() / 2) as u64;
        for b in buffers.iter_mut() {
            sink.pressure = b.ring.pending() >= half;
            b.ring.drain(|rec| sink.handle(rec));
        }
        sink.pressure = false;
        if let Some(post) = sink.post.as_mut() {
            post.end_of_drain();
        }
    }

    fn run(&mut self, note: &mut dyn FnMut(&str)) -> Result<RecordSummary, Error> {
        launch::install_signal_handlers();
        if let Some(child) = self.child.as_mut() {
            child.start()?;
        }
        // The recording has started: it takes the output's name now.
        self.sink.writer.publish()?;
        let start = Instant::now();
        let deadline = self.opts.duration.map(|d| start + d);
        let mut enable_at = self.opts.delay.map(|d| start + d);
        if self.sampling {
            self.sampling_since = Some(start);
        }
        let mut last_scan = Instant::now();
        let mut exit_code = None;
        let stop = loop {
            // Wake for the end of a delay too.
            let wake = match (deadline, enable_at) {
                (Some(d), Some(e)) => Some(d.min(e)),
                (d, e) => d.or(e),
            };
            self.wait_for_data(wake);
            if enable_at.is_some_and(|t| Instant::now() >= t) {
                enable_at = None;
                self.set_sampling(true);
            }
            if let Some(commands) = self.control.as_mut().map(Control::read) {
                let mut stop = false;
                for c in commands {
                    match c {
                        ControlLine::Command(c) => match c.as_str() {
                            "enable" => self.set_sampling(true),
                            "disable" => self.set_sampling(false),
                            "stop" => stop = true,
                            "ping" => {}
                            other => note(&format!(
                                "--control: unknown command '{}' (enable, disable, stop, ping)",
                                rperf_symbols::text::printable_cut(other, 64)
                            )),
                        },
                        ControlLine::TooLong(start) => note(&format!(
                            "--control: a line longer than {CONTROL_LINE_MAX} bytes was ignored ('{}…'); commands are enable, disable, stop, ping",
                            rperf_symbols::text::printable(&start)
                        )),
                    }
                    if let Some(ctl) = self.control.as_mut() {
                        ctl.ack();
                    }
                }
                if stop {
                    break StopReason::Requested;
                }
            }
            // Threads of the processes attached since the last look, listed before the drain
            // (see follow_threads).
            let listed: Vec<i32> =
                std::mem::take(&mut self.just_attached).into_iter().flat_map(procfs::threads_of).collect();
            self.drain();
            self.follow_threads(listed, note);
            self.sink.jit.poll();
            self.sink.sync_jit();
            for n in std::mem::take(&mut self.sink.jit.notes) {
                note(&n);
                self.notes.push(n);
            }
            if let Err(e) = self.sink.writer.finish_round() {
                self.sink.error.get_or_insert(e);
            }
            if let Some(e) = self.sink.error.take() {
                break StopReason::WriteError(e.to_string());
            }
            if self.opts.size_limit.is_some_and(|l| self.sink.writer.data_len() >= l) {
                break StopReason::SizeLimit;
            }
            let (sig, _, _) = launch::stop_signal();
            if sig != 0 {
                break StopReason::Signal(sig);
            }
            if self.opts.stop_fd.is_some_and(stop_requested) {
                break StopReason::Requested;
            }
            if let Some(child) = &self.child {
                if let Some(code) = child.try_wait() {
                    exit_code = Some(code);
                    break StopReason::CommandExited;
                }
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break StopReason::Duration;
            }
            match &self.opts.target {
                Target::App(name) => {
                    // Every wake-up (at least each millisecond) looks for new processes of the
                    // app; whether they all exited, every 10 ms.
                    let name = name.clone();
                    let found = self.app.as_mut().map(|w| w.scan()).unwrap_or_default();
                    for pid in found {
                        if !self.watched.contains(&pid) && self.attach_process(pid, note).is_ok() {
                            // What the app did before its events were open is not in the
                            // recording: say how much, for startup profiles.
                            let before = self
                                .attached_after
                                .map(|t| format!(", after {:.1} ms of its CPU time", t.as_secs_f64() * 1e3))
                                .unwrap_or_default();
                            note(&format!("attached to pid {pid} of app {name}{before}"));
                            if let Err(e) = self.sync_attrs() {
                                self.sink.error.get_or_insert(e);
                            }
                        }
                    }
                    if last_scan.elapsed() >= Duration::from_millis(10) {
                        last_scan = Instant::now();
                        if !self.watched.is_empty() && self.watched.iter().all(|&p| !procfs::is_alive(p)) {
                            break StopReason::AppExited;
                        }
                    }
                }
                Target::Processes(_) | Target::Threads(_)
                    if self.watched.iter().all(|&p| !procfs::is_alive(p)) =>
                {
                    break StopReason::TargetsExited;
                }
                _ => {}
            }
        };
        for fd in &self.fds {
            sys::ioc_disable(fd.as_raw_fd()).ok();
        }
        self.set_sampling(false);
        self.elapsed = Some(start.elapsed());
        self.drain();
        let mut write_error = self.sink.error.take().map(|e| e.to_string());
        if let StopReason::WriteError(e) = &stop {
            write_error.get_or_insert(e.clone());
        }
        if let Some(child) = &self.child {
            if exit_code.is_none() {
                exit_code = Some(self.stop_child(child, &stop));
            }
        }
        let mut features: Vec<(u32, writer::Feature)> =
            self.features(note).into_iter().map(|(id, b)| (id, writer::Feature::Bytes(b))).collect();
        self.sink.jit.finish();
        if let Some((file, len)) = self.sink.jit.store.section() {
            features.push((feature::RPERF_JIT_SYMFILES, writer::Feature::File(file, len)));
        }
        for n in self.sink.jit.store.summary().into_iter().chain(self.sink.jit.store.error.take()) {
            note(&n);
            self.notes.push(n);
        }
        let attrs = self.file_attrs();
        let samples = self.sink.samples;
        let lost = self.sink.lost;
        let lost_sideband = self.sink.lost_sideband;
        let cut_stacks = self.sink.cut_stacks;
        let (unwound, unwind_incomplete) =
            self.sink.post.as_ref().map_or((0, 0), |p| (p.unwound, p.incomplete));
        let bytes = match self.sink.writer.finish(&attrs, features) {
            Ok(b) => b,
            Err(e) => {
                write_error.get_or_insert(e.to_string());
                std::fs::metadata(&self.opts.output).map_or(0, |m| m.len())
            }
        };
        let stop = match write_error {
            Some(e) => StopReason::WriteError(e),
            None => stop,
        };
        let samples_written = self.sink.writer.samples_written();
        Ok(RecordSummary {
            samples,
            samples_written,
            lost,
            lost_sideband,
            cut_stacks,
            unwound,
            unwind_incomplete,
            bytes,
            exit_code,
            stop,
            notes: self.notes.clone(),
        })
    }

    /// Ends the launched command when recording stops before it does, and returns its exit code.
    fn stop_child(&self, child: &Launched, stop: &StopReason) -> i32 {
        let (sig, _, from_user) = launch::stop_signal();
        match stop {
            // The terminal already sent the signal to the command; kill() only reached rperf.
            StopReason::Signal(_) if from_user => child.kill(sig),
            StopReason::Signal(_) => {}
            _ => child.kill(libc::SIGTERM),
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Some(code) = child.try_wait() {
                return code;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        child.kill(libc::SIGTERM);
        child.wait()
    }

    fn wait_for_data(&self, deadline: Option<Instant>) {
        // An app's processes are looked for every millisecond, so that its start is recorded.
        let mut timeout = if self.app.is_some() { 1i32 } else { 100 };
        // Symbol files waiting to be copied are copied a little at a time, as soon as the JIT
        // reader may go on.
        if let Some(at) = self.sink.jit.work_at() {
            timeout = timeout.min(at.saturating_duration_since(Instant::now()).as_millis() as i32 + 1);
        }
        if let Some(d) = deadline {
            let left = d.saturating_duration_since(Instant::now()).as_millis();
            timeout = timeout.min(left as i32);
        }
        if self.buffers.iter().any(|b| b.ring.pending() as usize >= self.data_pages * sys::page_size() / 4) {
            return;
        }
        let mut fds: Vec<libc::pollfd> = self
            .buffers
            .iter()
            .chain(&self.sideband)
            .map(|b| libc::pollfd { fd: b.fd, events: libc::POLLIN, revents: 0 })
            .collect();
        if fds.is_empty() {
            std::thread::sleep(Duration::from_millis(timeout.max(0) as u64));
            return;
        }
        // SAFETY: fds points at a live array of pollfd of the given length.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout.max(0)) };
        // A ring whose tasks have all exited reports POLLHUP at once, every time: when nothing
        // has data, wait out the timeout rather than spin.
        if ready > 0 && fds.iter().all(|p| p.revents & libc::POLLIN == 0) {
            std::thread::sleep(Duration::from_millis(timeout.clamp(0, 10) as u64));
        }
    }

    fn features(&mut self, note: &mut dyn FnMut(&str)) -> Vec<(u32, Vec<u8>)> {
        let uts = uname();
        let mut f = vec![
            (feature::HOSTNAME, encode::string_feature(&uts.0)),
            (feature::OSRELEASE, encode::string_feature(&uts.1)),
            (feature::VERSION, encode::string_feature(concat!("rperf ", env!("CARGO_PKG_VERSION")))),
            (feature::ARCH, encode::string_feature(&uts.2)),
            (feature::CMDLINE, encode::cmdline_feature(&self.opts.cmdline)),
        ];
        let online = sys::online_cpus().len() as u32;
        let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible")
            .ok()
            .and_then(|s| sys::parse_cpu_list(s.trim()).ok())
            .map_or(online, |v| v.len() as u32);
        f.push((feature::NRCPUS, encode::nrcpus_feature(possible, online)));
        if let Some(model) = cpu_model() {
            f.push((feature::CPUDESC, encode::string_feature(&model)));
        }
        if let Some(kb) = total_mem_kb() {
            f.push((feature::TOTAL_MEM, kb.to_le_bytes().to_vec()));
        }
        let tracepoints: Vec<String> =
            self.events.iter().filter(|e| e.spec.is_tracepoint()).map(|e| e.spec.name.clone()).collect();
        if !tracepoints.is_empty() {
            if let Some(data) = crate::tracing::tracing_data(&tracepoints) {
                f.push((feature::TRACING_DATA, data));
            }
        }
        let info = rperf_perfdata::RecordingInfo {
            trace_offcpu: self.opts.trace_offcpu,
            recorded_ns: self.elapsed.map(|_| self.recorded.as_nanos() as u64),
            elapsed_ns: self.elapsed.map(|e| e.as_nanos() as u64),
            jit_reads: self.sink.jit.seen.then_some(self.sink.jit.reads),
        };
        f.push((feature::RPERF_INFO, info.encode()));
        let mut ids = Vec::new();
        if let Some(kid) = buildid::of_kernel() {
            ids.push(BuildIdEntry { pid: -1, kernel: true, build_id: kid, path: "[kernel.kallsyms]".into() });
        }
        for (path, bid) in &self.sink.dsos {
            if let Some(bid) = bid.clone().or_else(|| buildid::of_file(std::path::Path::new(path))) {
                ids.push(BuildIdEntry { pid: -1, kernel: false, build_id: bid, path: path.clone() });
            }
        }
        // The vDSO exists only in memory; keep its image so that its frames can be named later.
        let vdso = rperf_symbols::running_vdso();
        if let Some(bid) = vdso.as_deref().and_then(buildid::of_image) {
            ids.push(BuildIdEntry { pid: -1, kernel: false, build_id: bid, path: "[vdso]".into() });
        }
        f.push((feature::BUILD_ID, encode::build_id_feature(&ids)));
        if let Some(image) = vdso {
            f.push((feature::RPERF_VDSO, image));
        }
        let mut refused = Vec::new();
        if let Some(dumps) = writer::jitdumps_feature(&self.sink.jitdumps, &mut refused) {
            f.push((feature::RPERF_JITDUMPS, dumps));
        }
        if let Some(maps) = writer::perf_maps_feature(&self.sink.pids, &mut refused) {
            f.push((feature::RPERF_PERF_MAPS, maps));
        }
        for why in refused {
            note(&why);
            self.notes.push(why);
        }
        if let Some(syms) = self.kernel_syms.take().and_then(|h| h.join().ok()) {
            let snap = kallsyms::snapshot(&syms, &self.sink.kernel_hits);
            f.push((feature::RPERF_KALLSYMS, snap.into_bytes()));
        }
        f
    }
}

/// Sizes the sample and side-band ring buffers (data pages per CPU) to fit the locked-memory
/// budget of an unprivileged user: kernel.perf_event_mlock_kb per online CPU plus RLIMIT_MEMLOCK,
/// where each ring also costs its metadata page. Root is not limited.
pub(crate) fn fit_mlock_budget(wanted: usize, rings: usize) -> (usize, usize) {
    let side = |p: usize| SIDEBAND_PAGES.min((p / 4).max(1));
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 || rings == 0 {
        return (wanted, SIDEBAND_PAGES);
    }
    let page_kb = (sys::page_size() / 1024).max(1) as u64;
    let mlock_kb: u64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_mlock_kb")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(516);
    // SAFETY: getrlimit fills a local struct.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rl) };
    if rl.rlim_cur == libc::RLIM_INFINITY {
        return (wanted, SIDEBAND_PAGES);
    }
    let budget_kb = mlock_kb * sys::online_cpus().len() as u64 + rl.rlim_cur / 1024;
    let per_ring = (budget_kb / page_kb / rings as u64) as usize;
    let mut pages = wanted;
    while pages > 1 && pages + 1 + side(pages) + 1 > per_ring {
        pages /= 2;
    }
    (pages, side(pages))
}

/// Maps a ring buffer of `pages` data pages, halving the size while the locked-memory limit
/// refuses it. Returns the ring and the pages it got.
fn map_halving(fd: RawFd, mut pages: usize) -> Result<(RingBuffer, usize), Error> {
    loop {
        match RingBuffer::map(fd, pages) {
            Ok(r) => return Ok((r, pages)),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::ENOMEM)) && pages > 1 => {
                pages /= 2;
            }
            Err(e) => {
                let mlock_kb = std::fs::read_to_string("/proc/sys/kernel/perf_event_mlock_kb")
                    .map_or("?".into(), |s| s.trim().to_string());
                return Err(Error::Mmap {
                    pages,
                    source: e,
                    remedy: format!(
                        "the locked-memory budget for ring buffers is used up \
                         (kernel.perf_event_mlock_kb={mlock_kb} per CPU, plus `ulimit -l`); raise \
                         `sysctl kernel.perf_event_mlock_kb`, raise `ulimit -l`, run as root, or record \
                         fewer CPUs (--cpu) or threads"
                    ),
                });
            }
        }
    }
}

fn describe(pid: i32, cpu: u32) -> String {
    if pid == -1 {
        format!("all processes on cpu {cpu}")
    } else {
        format!("pid/tid {pid} on cpu {cpu}")
    }
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

fn make_attr(
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
    }
    a.set_sample_id_all(1);
    // CLOCK_MONOTONIC: the clock runtimes stamp their JIT code with (ART), and the one the
    // JIT interface's reads are timed with.
    a.set_use_clockid(1);
    a.clockid = libc::CLOCK_MONOTONIC;
    a.set_watermark(1);
    a.__bindgen_anon_2.wakeup_watermark = (data_pages * sys::page_size() / 4) as u32;
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

fn uname() -> (String, String, String) {
    // SAFETY: uname fills a local utsname struct.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    unsafe { libc::uname(&mut u) };
    let s = |f: &[libc::c_char]| {
        // SAFETY: utsname fields are NUL-terminated within their arrays.
        unsafe { std::ffi::CStr::from_ptr(f.as_ptr()) }.to_string_lossy().into_owned()
    };
    (s(&u.nodename), s(&u.release), s(&u.machine))
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn total_mem_kb() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    info.lines().find_map(|l| l.strip_prefix("MemTotal:"))?.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::MapLine;

    #[test]
    fn mmap2_records_give_path_and_build_id() {
        let b = RecordBuilder { sample_type: sample::IDENTIFIER | sample::TID | sample::TIME };
        let m = MapLine {
            start: 0x1000,
            end: 0x2000,
            perms: "r-xp".into(),
            pgoff: 0,
            major: 8,
            minor: 1,
            inode: 42,
            path: "/usr/lib/libx.so".into(),
        };
        let id: Vec<u8> = (1..=20).collect();
        let rec = b.mmap2(1, 1, &m, &m.path, Some(&id), &SampleId::default());
        let misc_bits = u16::from_le_bytes([rec[4], rec[5]]);
        assert_eq!(
            exec_mapping(record_type::MMAP2, misc_bits, &rec),
            Some(("/usr/lib/libx.so".into(), Some(id)))
        );
        let data = MapLine { perms: "r--p".into(), ..m.clone() };
        let rec = b.mmap2(1, 1, &data, &data.path, None, &SampleId::default());
        assert_eq!(exec_mapping(record_type::MMAP2, misc::USER, &rec), None);
    }
}
