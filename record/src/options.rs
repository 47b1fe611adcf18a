//! Plain settings of a recording, filled in by the CLI.

use std::path::PathBuf;
use std::time::Duration;

use crate::event::EventSpec;
use crate::target::Target;

/// How call stacks are recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallGraph {
    /// Only the sampled instruction pointer.
    None,
    /// The kernel walks frame pointers (PERF_SAMPLE_CALLCHAIN).
    FramePointer,
    /// User registers and a copy of the user stack, unwound later with DWARF CFI.
    Dwarf {
        /// Bytes of stack copied per sample.
        stack_size: u32,
    },
}

/// The default DWARF stack copy per sample. 32 KiB reaches the thread entry of the stacks
/// measured in README.md's table, where perf's 8 KiB default truncates; only the part that
/// holds data is kept in the file.
pub const DEFAULT_DWARF_STACK: u32 = 32 * 1024;

/// Sampling rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rate {
    /// Samples per second (the kernel adjusts the period).
    Frequency(u64),
    /// One sample every N events.
    Period(u64),
}

/// The default sampling frequency.
pub const DEFAULT_FREQUENCY: u64 = 4000;

/// Everything `record` needs to know.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// What to profile.
    pub target: Target,
    /// Events; empty means the default (cpu-cycles, or cpu-clock without a PMU).
    pub events: Vec<EventSpec>,
    /// Sampling rate; None means the default frequency (period 1 for tracepoints).
    pub rate: Option<Rate>,
    /// Stack recording mode.
    pub call_graph: CallGraph,
    /// CPUs to profile on; None means all online CPUs.
    pub cpus: Option<Vec<u32>>,
    /// Follow new threads and child processes.
    pub inherit: bool,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// The perf.data path.
    pub output: PathBuf,
    /// Ring-buffer data pages per CPU (rounded up to a power of two); None picks by mode.
    pub mmap_pages: Option<usize>,
    /// Stop when the data section reaches this many bytes.
    pub size_limit: Option<u64>,
    /// An off-CPU recording (`--trace-offcpu`): the file says so, and reports weigh its
    /// samples by time.
    pub trace_offcpu: bool,
    /// rperf's own command line, stored in the file.
    pub cmdline: Vec<String>,
    /// Write the recording into this open file descriptor instead of creating `output`: the
    /// file a parent rperf opened before running this one as an app's user (`run-as`), who
    /// may not create files where the output goes.
    pub out_fd: Option<i32>,
    /// Stop when this file descriptor becomes readable or its writer closes it: how the
    /// parent asks a recording running as another user (which it may not signal) to stop.
    pub stop_fd: Option<i32>,
    /// Start sampling this long after recording starts (after the command's exec).
    pub delay: Option<Duration>,
    /// The longest the recording waits between drains of its ring buffers when nothing else
    /// wakes it; None for `tick()`'s choice. What was sampled is in the file at most this long
    /// (plus a write) later.
    pub tick: Option<Duration>,
    /// Commands from outside (`--control fifo:CTL[,ACK]`): `enable`, `disable`, `stop` and
    /// `ping` read from the CTL fifo, each answered `ack` on the ACK fifo.
    pub control: Option<(PathBuf, Option<PathBuf>)>,
    /// Commands on stdin, as simpleperf's `--stdio-controls-profiling` (what its app API,
    /// `ProfileSession`, drives): `started` is written to stdout once recording runs; `pause`
    /// and `resume` lines switch sampling off and on, each answered `ok` (or `error`); the end
    /// of stdin stops the recording.
    pub stdio_controls: bool,
    /// Leave out samples of rperf itself (`-a` samples it too).
    pub exclude_perf: bool,
    /// Keep the task records (FORK, COMM, MMAP, EXIT) of processes that began and ended
    /// without a sample, which are otherwise left out.
    pub all_task_events: bool,
    /// Read the GDB JIT interface of the recorded processes (`__jit_debug_descriptor`), to
    /// name their JIT code.
    pub jit_interface: bool,
    /// Bounds on the symbol files copied from the JIT interface.
    pub jit_limits: crate::JitLimits,
    /// With DWARF call graphs, unwind each sample's user stack while recording and store the
    /// call chain instead of the stack copy (`--post-unwind`, the default).
    pub post_unwind: bool,
    /// The clock samples are stamped with (`--clockid`; CLOCK_MONOTONIC by default).
    pub clockid: i32,
}

impl RecordOptions {
    /// The longest wait between drains (`tick`). By default 0.1 s for a command, processes,
    /// threads or an app: the records of their new mappings are read soon, so that a JIT
    /// runtime's registrations are read from their start, and attached targets are checked
    /// for their exit. 2 s system-wide, where wake-ups are most of an idle machine's cost of an
    /// always-on recording; a process's JIT interface is then found up to 2 s after it maps its
    /// runtime (code it registers and frees within that time is not named). A system-wide tick
    /// that finds no side-band record and nothing due goes by without a pass (see
    /// `Session::quiet_tick`); a tick set here is always a pass.
    pub fn tick(&self) -> Duration {
        self.tick.unwrap_or(match self.target {
            Target::SystemWide => Duration::from_secs(2),
            _ => Duration::from_millis(100),
        })
    }

    /// A recording of `target` into `output` with the defaults of `rperf record` (default
    /// events and rate, no call graphs, new threads followed, the JIT interface read); set the
    /// rest by name: `RecordOptions { duration, ..RecordOptions::new(target, output) }`.
    pub fn new(target: Target, output: PathBuf) -> RecordOptions {
        RecordOptions {
            target,
            events: Vec::new(),
            rate: None,
            call_graph: CallGraph::None,
            cpus: None,
            inherit: true,
            duration: None,
            output,
            mmap_pages: None,
            size_limit: None,
            trace_offcpu: false,
            cmdline: Vec::new(),
            out_fd: None,
            stop_fd: None,
            delay: None,
            tick: None,
            control: None,
            stdio_controls: false,
            exclude_perf: false,
            all_task_events: false,
            jit_interface: true,
            jit_limits: crate::JitLimits::default(),
            post_unwind: true,
            clockid: libc::CLOCK_MONOTONIC,
        }
    }
}

/// The clocks `--clockid` takes, by perf's names for them (`CLOCK_` and case aside).
const CLOCKS: [(&str, &str, i32); 5] = [
    ("monotonic", "mono", libc::CLOCK_MONOTONIC),
    ("monotonic_raw", "raw", libc::CLOCK_MONOTONIC_RAW),
    ("realtime", "real", libc::CLOCK_REALTIME),
    ("boottime", "boot", libc::CLOCK_BOOTTIME),
    ("tai", "tai", libc::CLOCK_TAI),
];

/// A clock named as perf's `--clockid` takes it: `monotonic` (`mono`), `monotonic_raw`
/// (`raw`), `realtime` (`real`), `boottime` (`boot`), `tai`, with or without `CLOCK_`, or a
/// number.
pub fn parse_clockid(name: &str) -> Result<i32, String> {
    let lower = name.trim().to_ascii_lowercase();
    let short = lower.strip_prefix("clock_").unwrap_or(&lower);
    if let Some(&(_, _, id)) = CLOCKS.iter().find(|(long, abbr, _)| short == *long || short == *abbr) {
        return Ok(id);
    }
    match short.parse::<i32>() {
        Ok(n) if n >= 0 => Ok(n),
        _ => Err(format!(
            "--clockid {name}: no such clock; give one of {} or a clock number",
            CLOCKS.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_by_perfs_names() {
        assert_eq!(parse_clockid("monotonic"), Ok(libc::CLOCK_MONOTONIC));
        assert_eq!(parse_clockid("CLOCK_MONOTONIC_RAW"), Ok(libc::CLOCK_MONOTONIC_RAW));
        assert_eq!(parse_clockid("real"), Ok(libc::CLOCK_REALTIME));
        assert_eq!(parse_clockid("7"), Ok(7));
        assert!(parse_clockid("sundial").unwrap_err().contains("boottime"));
    }
}
