//! rperf's recorder: everything that talks to the kernel's perf_events interface.
//!
//! It opens sampling events for a target (a launched command, processes, threads, an app by
//! name, or the whole system), drains the per-CPU ring buffers and writes a `perf.data` file
//! that Linux perf, rperf's reporter and other perf.data readers open. Raw addresses only:
//! symbolization happens later, in the report.
//!
//! Non-goals: reading perf.data (the report side does that), unwinding, symbols.
//!
//! ```no_run
//! use rperf_record::{CallGraph, RecordOptions, Recorder, Target};
//! let target = Target::Command(vec!["sleep".into(), "10".into()]);
//! let opts = RecordOptions { call_graph: CallGraph::FramePointer, ..RecordOptions::new(target, "perf.data".into()) };
//! let recording = Recorder::start(opts, Box::new(|note| eprintln!("{note}"))).unwrap();
//! std::thread::sleep(std::time::Duration::from_secs(1));
//! recording.stop();
//! println!("{} samples", recording.summary().unwrap().samples);
//! ```
#![deny(missing_docs)]

mod attr;
mod buffers;
mod control;
mod counter;
mod error;
pub mod event;
mod features;
mod jit_debug;
mod jit_files;
mod jit_layout;
mod jit_store;
mod kernel_symbols;
pub mod launch;
mod options;
mod plan;
mod post_unwind;
pub mod procfs;
mod recorder;
pub mod records;
pub mod ring;
mod round;
pub mod sample;
mod session;
mod short_lived;
mod sink;
pub mod sys;
pub mod target;
mod tracing;
pub mod tty;
pub mod writer;

pub use attr::event_supported;
pub use control::{ControlLine, Lines as ControlLines};
pub use counter::{CountOptions, CountedEvent, CounterFd, Counters, Reading};
pub use error::{open_remedy, Error};
pub use event::{parse_event, parse_event_list, EventKind, EventSpec};
pub use jit_store::JitLimits;
pub use options::{parse_clockid, CallGraph, Rate, RecordOptions, DEFAULT_DWARF_STACK, DEFAULT_FREQUENCY};
pub use recorder::{record, Handle, RecordSummary, Recorder, StopReason};
pub use target::Target;
