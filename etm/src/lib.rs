//! Arm CoreSight ETM instruction trace, as simpleperf and Linux perf record it
//! (`-e cs-etm`): the trace units' configuration (`info`), the recording's AUX trace and the
//! threads and mappings it ran in (`recording`), and decoding into OpenCSD's generic trace
//! elements (`decode`) with the library OpenCSD ships (`opencsd`, loaded at run time).
//!
//! Decoding needs the code that ran: instruction bytes are read from the binaries the
//! recording maps, found by the caller (a binary cache, `--symfs`).

pub mod autofdo;
pub mod binaries;
pub mod decode;
pub mod info;
pub mod opencsd;
pub mod recording;

pub use binaries::Binaries;
pub use decode::{decode, Element, ElementKind, Sink, State, Summary};

pub use info::{parse_auxtrace_info, CpuTrace, Registers, TraceUnit};
pub use recording::{EtmRecording, Mapping, Threads};
