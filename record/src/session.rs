//! An open recording: its events, ring buffers and targets. Opening follows the plan;
//! processes are attached, their threads followed and their state synthesized from /proc.

use std::collections::{BTreeSet, HashMap};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use rperf_perfdata::bytes::u32_at;
use rperf_symbols::buildid;

use crate::attr::make_attr;
use crate::buffers::{map_halving, CpuBuffer};
use crate::control::Control;
use crate::error::open_remedy;
use crate::event::EventSpec;
use crate::kernel_symbols::KernelSymbols;
use crate::launch::{self, Launched};
use crate::options::{CallGraph, Rate, RecordOptions};
use crate::plan::Plan;
use crate::procfs;
use crate::records::RecordBuilder;
use crate::ring::RingBuffer;
use crate::sink::Sink;
use crate::sys::{self, perf_event_attr, record_type};
use crate::target::{self, Target};
use crate::writer::FileAttr;
use crate::Error;

pub(crate) struct OpenEvent {
    pub(crate) spec: EventSpec,
    pub(crate) attr: perf_event_attr,
    pub(crate) ids: Vec<u64>,
    /// The side-band event: a dummy software event that never samples and carries the mmap,
    /// comm and task records in a ring buffer of its own.
    pub(crate) sideband: bool,
}

pub(crate) struct Session {
    /// Set by the recording's `Handle` to stop it.
    pub(crate) stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub(crate) opts: RecordOptions,
    pub(crate) events: Vec<OpenEvent>,
    pub(crate) fds: Vec<OwnedFd>,
    /// The sampling events' descriptors (not the sideband's), which delay and control switch.
    pub(crate) sample_fds: Vec<i32>,
    /// Sampling is on (off during --delay and after a `disable` command).
    pub(crate) sampling: bool,
    /// How long sampling was on, and since when it is.
    pub(crate) recorded: Duration,
    pub(crate) sampling_since: Option<Instant>,
    /// How long the recording lasted, once it ended.
    pub(crate) elapsed: Option<Duration>,
    pub(crate) control: Option<Control>,
    pub(crate) buffers: Vec<CpuBuffer>,
    pub(crate) sideband: Vec<CpuBuffer>,
    pub(crate) cpus: Vec<u32>,
    pub(crate) data_pages: usize,
    pub(crate) side_pages: usize,
    pub(crate) sink: Sink,
    pub(crate) child: Option<Launched>,
    pub(crate) watched: BTreeSet<i32>,
    /// Threads of attached processes whose events were opened directly.
    pub(crate) opened_tids: std::collections::HashSet<i32>,
    /// Processes attached since the recording loop last looked for their threads: threads
    /// created while they were attached are found once, after that (later ones inherit).
    pub(crate) just_attached: Vec<i32>,
    /// Finds the processes of the app (`--app`) as they start.
    pub(crate) app: Option<target::AppWatcher>,
    /// CPU time the last attached process had used when its events were open.
    pub(crate) attached_after: Option<Duration>,
    pub(crate) builder: RecordBuilder,
    pub(crate) notes: Vec<String>,
    /// One moment on the wall clock and on the sample clock (ns), read as recording began.
    pub(crate) clock_reference: (u64, u64),
    pub(crate) kernel: KernelSymbols,
}

impl Session {
    /// Turns the sampling events on or off, counting how long they were on.
    pub(crate) fn set_sampling(&mut self, on: bool) {
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

    pub(crate) fn open(opts: &RecordOptions, note: &mut dyn FnMut(&str)) -> Result<Session, Error> {
        launch::reset_stop_signal();
        sys::set_sample_clock(opts.clockid);
        let Plan { opts, specs, rate, sample_type, cpus, data_pages, side_pages, notes } =
            Plan::new(opts, note)?;
        let opts = &opts;
        let events = open_events(&specs, rate, opts, sample_type, (data_pages, side_pages));
        let child = match &opts.target {
            Target::Command(argv) => Some(Launched::prepare(argv)?),
            _ => None,
        };
        let builder = RecordBuilder { sample_type };
        let sink = Sink::new(opts)?;
        let (kernel, kernel_start) = KernelSymbols::start();
        let mut s = Session {
            stop: Default::default(),
            opts: opts.clone(),
            events,
            fds: Vec::new(),
            sample_fds: Vec::new(),
            sampling: opts.delay.is_none(),
            recorded: Duration::ZERO,
            sampling_since: None,
            elapsed: None,
            control: match &opts.control {
                Some((c, a)) => Some(Control::open(c, a.as_deref())?),
                None if opts.stdio_controls => Some(Control::stdio()?),
                None => None,
            },
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
            clock_reference: (sys::clock_ns(libc::CLOCK_REALTIME), sys::clock_ns(opts.clockid)),
            kernel,
        };
        match kernel_start {
            Ok(start) => s.kernel.write_map(start, &mut s.sink.writer, &s.builder)?,
            Err(why) => {
                note(&why);
                s.notes.push(why);
            }
        }
        s.open_targets(note)?;
        s.sync_attrs()?;
        Ok(s)
    }

    /// Opens the events of the targets (attaching to processes already running, synthesizing
    /// their records from /proc).
    fn open_targets(&mut self, note: &mut dyn FnMut(&str)) -> Result<(), Error> {
        let s = self;
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
        Ok(())
    }

    pub(crate) fn attach_process(&mut self, pid: i32, note: &mut dyn FnMut(&str)) -> Result<(), Error> {
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
    pub(crate) fn follow_threads(&mut self, listed: Vec<i32>, note: &mut dyn FnMut(&str)) {
        for tid in listed {
            let forked = self.sink.forked_tids.as_ref().is_some_and(|f| f.contains(&(tid as u32)));
            if self.opened_tids.contains(&tid) || forked {
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

    pub(crate) fn synthesize(&mut self, pid: i32, only_tid: Option<i32>) {
        let id = self.events.iter().find(|e| e.sideband).and_then(|e| e.ids.first()).copied().unwrap_or(0);
        let mut recs = Vec::new();
        let mut cache: HashMap<String, Option<Vec<u8>>> = HashMap::new();
        crate::records::synthesize_process(
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
                let t = u32_at(&r, 0);
                let rtid = u32_at(&r, 12);
                if t == Some(record_type::COMM) && rtid != Some(tid as u32) {
                    continue;
                }
                if t == Some(record_type::FORK) {
                    continue;
                }
            }
            self.sink.synthesizing = true;
            self.sink.handle(&r);
            self.sink.synthesizing = false;
        }
    }

    /// Opens every event for `pid` (a tid, or -1 for all) on every CPU.
    pub(crate) fn open_task(&mut self, pid: i32, note: &mut dyn FnMut(&str)) -> Result<(), Error> {
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

    pub(crate) fn open_one(
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

    pub(crate) fn map_ring(&mut self, fd: RawFd, note: &mut dyn FnMut(&str)) -> Result<RingBuffer, Error> {
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

    pub(crate) fn file_attrs(&self) -> Vec<FileAttr> {
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

    pub(crate) fn sync_attrs(&mut self) -> Result<(), Error> {
        let attrs = self.file_attrs();
        self.sink.writer.update_attrs(&attrs)
    }

    /// Drains the side-band rings first, so that a sample's mappings are written before it,
    /// then the sample rings, cutting stack copies of rings that are at least half full.
    ///
    /// Records written as they came are left in their rings until the pass is written, in
    /// time order, at its end; then the kernel gets their space back. A sample ring at least half
    /// full (a side-band ring, which wakes the recorder half full, at least three quarters full)
    /// is handed back as soon as it is read, its records copied, and so are all rings where
    /// samples carry stack copies: unwinding them takes long enough for a held ring to fill.
    pub(crate) fn drain(&mut self) {
        let clocked = self.events.iter().all(|e| e.attr.use_clockid() != 0);
        let began = clocked.then(sys::sample_clock_ns);
        let Session { buffers, sideband, sink, .. } = self;
        let rings: Vec<&CpuBuffer> = sideband.iter().chain(buffers.iter()).collect();
        let data: Vec<&[u8]> = rings.iter().map(|b| b.ring.data()).collect();
        let mut scratch = Vec::new();
        let mut held = Vec::with_capacity(rings.len());
        for (i, b) in rings.iter().enumerate() {
            let side = i < sideband.len();
            let len = data[i].len() as u64;
            sink.pressure = !side && b.ring.pending() >= len / 2;
            // Side-band records held through the pass are not copied, and not written before
            // its end, where the processes that began and ended in it are left out.
            let held_up_to = if side { len / 4 * 3 } else { len / 2 };
            let hold = b.ring.pending() < held_up_to && !sink.trim;
            let end = b.ring.peek(&mut scratch, |at, rec| {
                let place = at.filter(|_| hold).map(|at| (i as u32, at));
                if side {
                    sink.handle_sideband(rec, place);
                } else {
                    sink.handle_placed(rec, place);
                }
                if sink.writer.round_full() {
                    sink.write_drained(&data);
                }
            });
            if hold {
                held.push((b, end));
            } else {
                b.ring.release(end);
            }
        }
        sink.write_pass(&data, began);
        for (b, end) in held {
            b.ring.release(end);
        }
        sink.pressure = false;
        sink.exited.clear();
        if let Some(post) = sink.post.as_mut() {
            post.end_of_drain();
        }
    }
}

/// The events of a plan, and the side-band event: a dummy software event that never samples,
/// opened for the mmap, comm and task records its flags ask for.
fn open_events(
    specs: &[EventSpec],
    rate: Option<Rate>,
    opts: &RecordOptions,
    sample_type: u64,
    (data_pages, side_pages): (usize, usize),
) -> Vec<OpenEvent> {
    let launch_cmd = matches!(opts.target, Target::Command(_));
    let on_exec = launch_cmd && opts.delay.is_none();
    let mut events: Vec<OpenEvent> = specs
        .iter()
        .map(|spec| OpenEvent {
            spec: spec.clone(),
            attr: make_attr(spec, rate, opts, false, sample_type, data_pages, on_exec),
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
    // The kernel wakes the recorder each time a watermark's worth of records is written to a
    // ring, however much was read meanwhile: where processes come and go, the side-band rings'
    // wake-ups are most of what recording costs. Half a ring (a sample ring wakes at a quarter,
    // to keep room for large stack copies) halves them, and leaves the other half for the
    // records written until the recorder has drained it.
    side_attr.__bindgen_anon_2.wakeup_watermark = (side_pages * sys::page_size() / 2) as u32;
    events.push(OpenEvent { spec: dummy, attr: side_attr, ids: Vec::new(), sideband: true });
    events
}

fn describe(pid: i32, cpu: u32) -> String {
    if pid == -1 {
        format!("all processes on cpu {cpu}")
    } else {
        format!("pid/tid {pid} on cpu {cpu}")
    }
}
