//! The recording loop: open events, drain ring buffers into perf.data, stop cleanly.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rperf_perfdata::feature;

use crate::attr::sample_watermark;
use crate::control::{Control, ControlLine, Dialect, CONTROL_LINE_MAX};
use crate::jit_files::JitFiles;
use crate::launch::{self, Launched};
use crate::options::RecordOptions;
use crate::procfs;
use crate::session::Session;
use crate::sys::{self};
use crate::target::Target;
use crate::writer::{self};
use crate::Error;

/// The longest a system-wide recording leaves samples in their rings while no process begins,
/// maps a file or ends (`Session::quiet_tick`).
const QUIET_PASS_EVERY: Duration = Duration::from_secs(10);

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

/// Records according to `opts`, until something stops the recording (see `StopReason`). Notes
/// are passed to `note` as they happen.
pub fn record(opts: &RecordOptions, note: &mut dyn FnMut(&str)) -> Result<RecordSummary, Error> {
    let mut session = Session::open(opts, note)?;
    session.run(note)
}

/// Starts recordings that run on a thread of their own, stopped through their `Handle`.
pub struct Recorder;

/// A recording under way: `stop` asks it to end, `summary` waits for it.
pub struct Handle {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<RecordSummary, Error>>,
}

impl Recorder {
    /// Opens the events of `opts` and starts recording on a new thread. Errors of opening (no
    /// such process, an event this machine refuses) are returned here; `note` hears the notes
    /// of the whole recording.
    pub fn start(opts: RecordOptions, mut note: Box<dyn FnMut(&str) + Send>) -> Result<Handle, Error> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (opened, is_open) = std::sync::mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("rperf-record".into())
            .spawn(move || {
                let session = Session::open(&opts, &mut *note);
                opened.send(session.as_ref().err().map(|e| e.to_string())).ok();
                let mut session = session?;
                session.stop = flag;
                session.run(&mut *note)
            })
            .map_err(|e| Error::Usage(format!("cannot start the recording thread: {e}")))?;
        match is_open.recv() {
            Ok(None) => Ok(Handle { stop, thread }),
            // The thread returns the error itself, typed.
            _ => match thread.join() {
                Ok(Err(e)) => Err(e),
                _ => Err(Error::Usage("the recording thread failed".into())),
            },
        }
    }
}

impl Handle {
    /// Asks the recording to stop, as a `stop` on `--control` does; returns at once.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        launch::wake();
    }

    /// Whether the recording has ended (its command exited, its duration passed, ...).
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Waits for the recording to end and returns its summary.
    pub fn summary(self) -> Result<RecordSummary, Error> {
        self.thread.join().unwrap_or_else(|_| Err(Error::Usage("the recording thread failed".into())))
    }
}

/// Whether the parent asked to stop through `fd`: a byte written, or the parent gone.
fn stop_requested(fd: i32) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd, for the duration of the call.
    let ready = unsafe { libc::poll(&mut p, 1, 0) };
    ready > 0 && p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0
}

impl Session {
    pub(crate) fn run(&mut self, note: &mut dyn FnMut(&str)) -> Result<RecordSummary, Error> {
        launch::install_signal_handlers();
        if let Some(child) = self.child.as_mut() {
            child.start()?;
        }
        // The recording has started: it takes the output's name now.
        self.sink.writer.publish()?;
        if let Some(c) = self.control.as_mut() {
            c.started();
        }
        let start = Instant::now();
        if self.sampling {
            self.sampling_since = Some(start);
        }
        let (stop, exit_code) = self.record_until_stop(start, note);
        for fd in &self.fds {
            sys::ioc_disable(fd.as_raw_fd()).ok();
        }
        self.set_sampling(false);
        self.elapsed = Some(start.elapsed());
        self.drain();
        Ok(self.finish(stop, exit_code, note))
    }

    /// Drains the rings, follows the targets and obeys the controls until something says stop:
    /// why, and the launched command's exit code when it exited.
    fn record_until_stop(&mut self, start: Instant, note: &mut dyn FnMut(&str)) -> (StopReason, Option<i32>) {
        let deadline = self.opts.duration.map(|d| start + d);
        let mut enable_at = self.opts.delay.map(|d| start + d);
        let mut last_scan = Instant::now();
        let mut last_pass = Instant::now();
        loop {
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
            if self.obey_controls(note) {
                return (StopReason::Requested, None);
            }
            if self.quiet_tick(last_pass, deadline) {
                if let Some(stop) = self.stop_asked() {
                    return (stop, None);
                }
                continue;
            }
            last_pass = Instant::now();
            // Threads of the processes attached since the last look, listed before the drain
            // (see follow_threads).
            let listed: Vec<i32> =
                std::mem::take(&mut self.just_attached).into_iter().flat_map(procfs::threads_of).collect();
            self.sink.forked_tids = (!listed.is_empty()).then(Default::default);
            self.drain();
            self.kernel.follow(&self.sink.kernel_hits);
            self.follow_threads(listed, note);
            // The forks that drain read were all the threads just listed needed.
            self.sink.forked_tids = None;
            self.sink.jit.poll();
            self.sink.sync_jit();
            for n in std::mem::take(&mut self.sink.jit.notes) {
                note(&n);
                self.notes.push(n);
            }
            if let Err(e) = self.sink.writer.finish_round() {
                self.sink.error.get_or_insert(e);
            }
            if let Some(stop) = self.stop_asked() {
                return (stop, None);
            }
            if let Some(code) = self.child.as_ref().and_then(Launched::try_wait) {
                return (StopReason::CommandExited, Some(code));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return (StopReason::Duration, None);
            }
            if let Some(stop) = self.follow_targets(&mut last_scan, note) {
                return (stop, None);
            }
        }
    }

    /// Whether this wake-up is a system-wide tick that can go by without a pass: no side-band
    /// record came (no process began, ran a program, mapped a file or ended) and nothing is
    /// due. The samples stay in their rings, a pass at least every `QUIET_PASS_EVERY`: on an
    /// idle machine the pass, not the wake-up, was most of what an always-on recording cost.
    /// A tick set by the caller (`rperf top`'s refresh) is always a pass.
    fn quiet_tick(&self, last_pass: Instant, deadline: Option<Instant>) -> bool {
        let now = Instant::now();
        let jit_due = self.jit_due_at().is_some_and(|t| t <= now);
        matches!(self.opts.target, Target::SystemWide)
            && self.opts.tick.is_none()
            && self.child.is_none()
            && now < last_pass + QUIET_PASS_EVERY
            && deadline.is_none_or(|d| now < d)
            && self.just_attached.is_empty()
            && !jit_due
            && self.sideband.iter().all(|b| b.ring.pending() == 0)
            && !self.sample_ring_due()
    }

    /// When the JIT reader is next due: symbol files waiting to be copied, or descriptors to
    /// read at their own pace.
    fn jit_due_at(&self) -> Option<Instant> {
        self.sink.jit.work_at().into_iter().chain(self.sink.jit.next_read()).min()
    }

    /// Whether a sample ring is a quarter full, its wake-up watermark: a pass is due.
    fn sample_ring_due(&self) -> bool {
        let watermark = sample_watermark(self.data_pages) as u64;
        self.buffers.iter().any(|b| b.ring.pending() >= watermark)
    }

    /// Carries out the commands that came on `--control` or stdin; true when one was `stop`
    /// (or, for simpleperf's dialect, stdin ended).
    fn obey_controls(&mut self, note: &mut dyn FnMut(&str)) -> bool {
        let Some(commands) = self.control.as_mut().map(Control::read) else { return false };
        let dialect = self.control.as_ref().map(|c| c.dialect);
        let known = match dialect {
            Some(Dialect::Simpleperf) => "pause, resume",
            _ => "enable, disable, stop, ping",
        };
        let mut stop = false;
        for c in commands {
            let done = match c {
                ControlLine::Command(c) => match (dialect, c.as_str()) {
                    (Some(Dialect::Perf), "enable") | (Some(Dialect::Simpleperf), "resume") => {
                        self.set_sampling(true);
                        true
                    }
                    (Some(Dialect::Perf), "disable") | (Some(Dialect::Simpleperf), "pause") => {
                        self.set_sampling(false);
                        true
                    }
                    (Some(Dialect::Perf), "stop") => {
                        stop = true;
                        true
                    }
                    (Some(Dialect::Perf), "ping") => true,
                    (_, other) => {
                        note(&format!(
                            "control: unknown command '{}' ({known})",
                            rperf_symbols::text::printable_cut(other, 64)
                        ));
                        false
                    }
                },
                ControlLine::TooLong(start) => {
                    note(&format!(
                        "control: a line longer than {CONTROL_LINE_MAX} bytes was ignored ('{}…'); commands are {known}",
                        rperf_symbols::text::printable(&start)
                    ));
                    false
                }
            };
            if let Some(ctl) = self.control.as_mut() {
                ctl.answer(done);
            }
        }
        stop || self.control.as_ref().is_some_and(|c| c.dialect == Dialect::Simpleperf && c.ended)
    }

    /// Why to stop now, if anything says so: a write error, the size limit, a signal, the stop
    /// descriptor or the handle.
    fn stop_asked(&mut self) -> Option<StopReason> {
        if let Some(e) = self.sink.error.take() {
            return Some(StopReason::WriteError(e.to_string()));
        }
        if self.opts.size_limit.is_some_and(|l| self.sink.writer.data_len() >= l) {
            return Some(StopReason::SizeLimit);
        }
        let (sig, _, _) = launch::stop_signal();
        if sig != 0 {
            return Some(StopReason::Signal(sig));
        }
        let by_fd = self.opts.stop_fd.is_some_and(stop_requested);
        (by_fd || self.stop.load(Ordering::SeqCst)).then_some(StopReason::Requested)
    }

    /// Attaches to an app's new processes; says to stop when every target has exited.
    fn follow_targets(&mut self, last_scan: &mut Instant, note: &mut dyn FnMut(&str)) -> Option<StopReason> {
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
                    *last_scan = Instant::now();
                    if !self.watched.is_empty() && self.watched.iter().all(|&p| !procfs::is_alive(p)) {
                        return Some(StopReason::AppExited);
                    }
                }
                None
            }
            Target::Processes(_) | Target::Threads(_)
                if self.watched.iter().all(|&p| !procfs::is_alive(p)) =>
            {
                Some(StopReason::TargetsExited)
            }
            _ => None,
        }
    }

    /// Ends the command, writes the features and the header: the recording's summary.
    fn finish(
        &mut self,
        stop: StopReason,
        mut exit_code: Option<i32>,
        note: &mut dyn FnMut(&str),
    ) -> RecordSummary {
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
        let mut files = JitFiles::new(self.opts.jit_limits, self.sink.jit.store.bytes());
        if let Some((file, len)) = files.jitdumps(&self.sink.jitdumps) {
            features.push((feature::RPERF_JITDUMPS, writer::Feature::File(file, len)));
        }
        if let Some((file, len)) = files.perf_maps(&self.sink.pids) {
            features.push((feature::RPERF_PERF_MAPS, writer::Feature::File(file, len)));
        }
        if let Some((file, len)) = self.sink.jit.store.section() {
            features.push((feature::RPERF_JIT_SYMFILES, writer::Feature::File(file, len)));
        }
        let store = &mut self.sink.jit.store;
        let left_out = std::mem::take(&mut files.notes).into_iter().chain(files.summary());
        for n in left_out.chain(store.summary()).chain(store.error.take()) {
            note(&n);
            self.notes.push(n);
        }
        let attrs = self.file_attrs();
        let bytes = match self.sink.writer.finish(&attrs, features) {
            Ok(b) => b,
            Err(e) => {
                write_error.get_or_insert(e.to_string());
                std::fs::metadata(&self.opts.output).map_or(0, |m| m.len())
            }
        };
        let sink = &self.sink;
        let (unwound, unwind_incomplete) = sink.post.as_ref().map_or((0, 0), |p| (p.unwound, p.incomplete));
        RecordSummary {
            samples: sink.samples,
            samples_written: sink.writer.samples_written(),
            lost: sink.lost,
            lost_sideband: sink.lost_sideband,
            cut_stacks: sink.cut_stacks,
            unwound,
            unwind_incomplete,
            bytes,
            exit_code,
            stop: write_error.map_or(stop, StopReason::WriteError),
            notes: self.notes.clone(),
        }
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
        let mut timeout = if self.app.is_some() {
            // An app's processes are looked for every millisecond, so that its start is recorded.
            1i32
        } else {
            // Besides the tick, the loop wakes for data (a ring a quarter full), a signal, a
            // stop or the command's exit (the wake pipe), the JIT reader's next look, or a
            // deadline.
            self.opts.tick().as_millis().clamp(1, i32::MAX as u128) as i32
        };
        if self.control.is_some() {
            // Controls are read at each wake-up.
            timeout = timeout.min(100);
        }
        // Symbol files waiting to be copied are copied a little at a time, as soon as the JIT
        // reader may go on; JIT descriptors are read at their own pace.
        if let Some(at) = self.jit_due_at() {
            timeout = timeout.min(at.saturating_duration_since(Instant::now()).as_millis() as i32 + 1);
        }
        if let Some(d) = deadline {
            let left = d.saturating_duration_since(Instant::now()).as_millis();
            timeout = timeout.min(left as i32);
        }
        if self.sample_ring_due() {
            return;
        }
        let rings = self.buffers.iter().chain(&self.sideband).map(|b| b.fd);
        let ring_count = self.buffers.len() + self.sideband.len();
        let wakes = launch::wake_fd().into_iter().chain(self.opts.stop_fd);
        let mut fds: Vec<libc::pollfd> =
            rings.chain(wakes).map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
        let ready = poll(&mut fds, timeout);
        // A ring whose tasks have all exited reports POLLHUP at once, every time: when nothing
        // has data, wait on the wake-ups alone (the command's exit among them) rather than spin.
        if ready > 0 && fds.iter().all(|p| p.revents & libc::POLLIN == 0) {
            poll(&mut fds[ring_count..], timeout.clamp(0, 10));
        }
        launch::clear_wakes();
    }
}

/// poll(2) on `fds` for at most `timeout_ms`: how many are ready.
fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> i32 {
    // SAFETY: fds points at a live array of pollfd of the given length.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms.max(0)) }
}
