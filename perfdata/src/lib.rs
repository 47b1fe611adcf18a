//! The perf.data contract, in one place for the writer (`rperf record`) and the reader
//! (`rperf report`, `rperf dump`): the file header's layout, the feature-section ids (perf's and
//! rperf's own), and the encodings of the sections rperf writes.
//!
//! Bytes only, but for `mapped`, the one place input files are mapped, and `inflate`, the one
//! place their compressed sections are inflated (under bounds): no files are opened here. The recorder gathers what goes into a section and the
//! reporter decides what to do with what comes out; both go through these functions, so the
//! two sides cannot drift apart.
//!
//! ```
//! use rperf_perfdata::{header::FileHeader, sections};
//! let h = FileHeader { attr_size: 144, attrs: (104, 144), data: (248, 0), event_types: (0, 0), features: vec![2, 192] };
//! assert_eq!(FileHeader::parse(&h.encode()), Some(h));
//! let maps = sections::encode_perf_maps(&[(42, b"1000 10 f\n".to_vec())]);
//! assert_eq!(sections::decode_perf_maps(&maps)[&42], "1000 10 f\n");
//! ```
#![deny(missing_docs)]

pub mod bytes;
pub mod checked;
pub mod encode;
pub mod events;
pub mod feature;
pub mod header;
pub mod inflate;
pub mod mapped;
pub mod repaired;
pub mod sample;
pub mod sections;
pub mod tracing;
pub mod walk;

pub use sections::{jitdump_pid, JitReads, JitSymfile, RecordingInfo, SymfileKind};
